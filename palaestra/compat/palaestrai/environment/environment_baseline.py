"""``palaestrai.environment.environment_baseline``: palaestra's
:class:`~palaestra.environment.EnvironmentBaseline`, palaestrAI's fields and order."""

from __future__ import annotations

from palaestra.environment.environment import EnvironmentBaseline

__all__ = ["EnvironmentBaseline"]
