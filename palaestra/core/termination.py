"""Termination conditions: when an episode ends and when a worker's phase ends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TerminationCondition:
    """Base of all termination conditions named in run files.

    The run file's ``params`` are passed to the constructor as keyword arguments. Override
    :meth:`episode_done` (checked after every environment step) and/or :meth:`phase_done`
    (checked after every episode of a worker).
    """

    def __init__(self, **params: Any) -> None:
        self.params = params

    def episode_done(self, environments_done: Sequence[bool]) -> bool:
        return False

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        return False


class EpisodeEndsWithEnvironment(TerminationCondition):
    """An episode ends as soon as one environment reports ``done``."""

    def episode_done(self, environments_done: Sequence[bool]) -> bool:
        return any(environments_done)


class PhaseEndsAfterEpisodes(TerminationCondition):
    """A worker's phase ends after the phase's ``episodes`` episodes."""

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        return episodes_done >= episodes
