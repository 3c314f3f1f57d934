"""Termination conditions: when an episode ends and when a worker's phase ends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from palaestra.core.wire.messages import AgentEvaluated


class TerminationCondition:
    """Base of all termination conditions named in run files.

    The run file's ``params`` are passed to the constructor as keyword arguments. Override
    :meth:`episode_done` (checked after every environment step) and/or :meth:`phase_done`
    (checked after every episode of a worker), and :meth:`evaluation_done` (after every
    evaluation, with the Brains' results).
    """

    def __init__(self, **params: Any) -> None:
        self.params = params

    def episode_done(self, environments_done: Sequence[bool]) -> bool:
        return False

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        return False

    def evaluation_done(self, evaluation: int, results: Sequence[AgentEvaluated]) -> bool:
        """Whether the phase ends after evaluation ``evaluation`` (0, 1, ...), given each
        agent's result; the default: no."""
        return False


class EpisodeEndsWithEnvironment(TerminationCondition):
    """An episode ends as soon as one environment reports ``done``."""

    def episode_done(self, environments_done: Sequence[bool]) -> bool:
        return any(environments_done)


class PhaseEndsAfterEpisodes(TerminationCondition):
    """A worker's phase ends after the phase's ``episodes`` episodes."""

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        return episodes_done >= episodes


def decides_episodes(condition: TerminationCondition) -> bool:
    """Whether ``condition`` says when an episode ends (it overrides ``episode_done``)."""
    return type(condition).episode_done is not TerminationCondition.episode_done


def decides_phases(condition: TerminationCondition) -> bool:
    """Whether ``condition`` says when a worker's phase ends (it overrides ``phase_done``)."""
    return type(condition).phase_done is not TerminationCondition.phase_done


def episode_conditions(conditions: Sequence[TerminationCondition]) -> list[TerminationCondition]:
    """The conditions an episode is played with: ``conditions``, and where none of them says
    when an episode ends, :class:`EpisodeEndsWithEnvironment`."""
    if any(decides_episodes(c) for c in conditions):
        return list(conditions)
    return [*conditions, EpisodeEndsWithEnvironment()]
