"""``palaestrai.core.protocol``: the reset request and response an environment's
``reset(request)`` takes and returns; palaestrAI's other messages are not offered."""

from __future__ import annotations

from palaestra.environment.reset import EnvironmentResetRequest, EnvironmentResetResponse

__all__ = ["EnvironmentResetRequest", "EnvironmentResetResponse"]


def __getattr__(name: str) -> object:
    raise ImportError(
        f"palaestra does not offer 'palaestrai.core.protocol.{name}': palaestra's processes "
        "exchange their own messages; an environment's reset request and response are offered",
        name=name,
    )
