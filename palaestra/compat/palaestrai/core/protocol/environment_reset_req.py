"""``palaestrai.core.protocol.environment_reset_req``: palaestra's reset request."""

from palaestra.environment.reset import EnvironmentResetRequest

__all__ = ["EnvironmentResetRequest"]
