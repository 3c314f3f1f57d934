"""``palaestrai.environment.environment_state``: palaestra's
:class:`~palaestra.environment.EnvironmentState`, palaestrAI's fields and order."""

from __future__ import annotations

from palaestra.environment.environment import EnvironmentState

__all__ = ["EnvironmentState"]
