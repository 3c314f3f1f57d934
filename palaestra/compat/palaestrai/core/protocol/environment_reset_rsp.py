"""``palaestrai.core.protocol.environment_reset_rsp``: palaestra's reset response."""

from palaestra.environment.reset import EnvironmentResetResponse

__all__ = ["EnvironmentResetResponse"]
