"""Run-level termination conditions named in ``run_config`` and ``simulation.conditions``."""

from __future__ import annotations

from typing import Any

from palaestra.core.termination import EpisodeEndsWithEnvironment, PhaseEndsAfterEpisodes


class VanillaRunGovernorTerminationCondition(PhaseEndsAfterEpisodes):
    """A phase ends when every worker has run the phase's ``episodes`` episodes."""


class EnvironmentTerminationCondition(EpisodeEndsWithEnvironment):
    """An episode ends when an environment reports ``done``."""


class MaxEpisodesTerminationCondition(PhaseEndsAfterEpisodes):
    """A worker's phase ends after ``max_episodes`` episodes (default: the phase's count)."""

    def __init__(self, max_episodes: int | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.max_episodes = max_episodes

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        limit = self.max_episodes if self.max_episodes is not None else episodes
        return episodes_done >= min(limit, episodes)
