"""The simulation controller's built-in termination condition."""

from __future__ import annotations

from palaestra.core.termination import EpisodeEndsWithEnvironment


class VanillaSimControllerTerminationCondition(EpisodeEndsWithEnvironment):
    """An episode ends when an environment is done (palaestrAI's default)."""
