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


class AgentObjectiveTerminationCondition(EpisodeEndsWithEnvironment):
    """An episode ends when an environment is done, or when an agent's objective is good
    enough: params ``{<agent name>: {brain_avgN: X}}`` end a worker's episode once the mean
    of that agent's last ``N`` objective values (over episodes, as palaestrAI's) reaches
    ``X``.

    The run-file loader hands the rules to the agents' Muscles, which check them as they
    compute their objectives; the step on which one is reached is the episode's last (its
    ``done`` is recorded as true).

    As the run's condition (``run_config.condition``), params ``{<agent name>: {phase_avgN:
    X}}`` end a phase: at the end of each episode of a worker the agent's Brain notes its
    average objective (over its whole memory, as palaestrAI's), and once the mean of a
    worker's last ``N`` such averages reaches ``X`` that worker, and every other at the end of
    its running episode, runs no further episode (see :mod:`palaestra.agent.phase_stop`).
    """

    def __init__(self, *args: Any, **params: Any) -> None:
        super().__init__(**params)
