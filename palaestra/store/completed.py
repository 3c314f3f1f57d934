"""Which episodes of a run instance are completed in the store: the one rule that both
``experiment-resume``'s start point and the run's view of a resumed run follow.

The simulation controller, each environment process and each Muscle process push their rows to
the store writer each over its own socket and in their own batches, so an executor killed
mid-phase may leave an episode's ``episodes`` row committed while its step rows died in a
buffer. An episode therefore counts as completed only when its ``episodes`` row is in AND its
last step's rows are: for each environment of the phase the ``world_states`` row of step
``episodes.steps`` (an environment counts its steps from 1), and for each agent its
``muscle_actions`` row flagged ``done`` (a Muscle counts from 0 and writes that row at the
episode's end; under Vanilla each agent has one row per step, under TakingTurns only the steps
of its turns, so an episode of fewer steps than agents has done rows of ``steps`` agents). A
process pushes its rows in order, so its last row in means all its rows of the episode are in.
Those last rows are recorded whatever the phase's ``record`` says (``all`` or ``{every: N}``);
a phase that recorded ``episodes`` only, or whose recording was paused (``recording_gaps``),
is judged by its ``episodes`` rows alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, and_, func, select

from palaestra.store import tables as t

Completed = set[tuple[int, int, int]]
"""(phase index, worker, episode) of each completed episode."""


def completed_episodes(connection: Connection, instance_id: int) -> Completed:
    """(phase index, worker, episode) of the episodes the instance completed (see the module's
    rule)."""
    phases = connection.execute(
        select(
            t.experiment_run_phases.c.id,
            t.experiment_run_phases.c.index.label("number"),
            t.experiment_run_phases.c.config,
        ).where(t.experiment_run_phases.c.experiment_run_instance_id == instance_id)
    ).all()
    done: Completed = set()
    for phase in phases:
        every = int((phase.config or {}).get("record_every", 1))
        episodes = _episodes(connection, phase.id)
        if every != 0 and not _has_gaps(connection, phase.id):
            episodes = _with_step_rows(connection, phase.id, episodes)
        done.update((int(phase.number), worker, episode) for _, worker, episode, _ in episodes)
    return done


_Episodes = list[tuple[int, int, int, int]]
"""(id, worker, episode, steps) of ``episodes`` rows."""


def _episodes(connection: Connection, phase_id: int) -> _Episodes:
    """The phase's ``episodes`` rows."""
    found = connection.execute(
        select(
            t.episodes.c.id, t.episodes.c.worker, t.episodes.c.episode, t.episodes.c.steps
        ).where(t.episodes.c.experiment_run_phase_id == phase_id)
    ).all()
    return [(int(r.id), int(r.worker), int(r.episode), int(r.steps)) for r in found]


def _has_gaps(connection: Connection, phase_id: int) -> bool:
    gap = connection.scalar(
        select(t.recording_gaps.c.id)
        .where(t.recording_gaps.c.experiment_run_phase_id == phase_id)
        .limit(1)
    )
    return gap is not None


def _with_step_rows(connection: Connection, phase_id: int, episodes: _Episodes) -> _Episodes:
    """Those of ``episodes`` whose last step's rows are all in."""
    environments, agents = (
        int(
            connection.scalar(
                select(func.count(owner.c.id)).where(owner.c.experiment_run_phase_id == phase_id)
            )
            or 0
        )
        for owner in (t.environments, t.agents)
    )
    last_states: dict[int, int] = dict(
        connection.execute(
            select(t.episodes.c.id, func.count(t.world_states.c.id))
            .join(
                t.environments,
                t.environments.c.experiment_run_phase_id == t.episodes.c.experiment_run_phase_id,
            )
            .join(
                t.world_states,
                and_(
                    t.world_states.c.environment_id == t.environments.c.id,
                    t.world_states.c.worker == t.episodes.c.worker,
                    t.world_states.c.episode == t.episodes.c.episode,
                    t.world_states.c.step == t.episodes.c.steps,
                ),
            )
            .where(t.episodes.c.experiment_run_phase_id == phase_id)
            .group_by(t.episodes.c.id)
        ).all()
    )
    last_actions: dict[int, int] = dict(
        connection.execute(
            select(t.episodes.c.id, func.count(func.distinct(t.muscle_actions.c.agent_id)))
            .join(
                t.agents,
                t.agents.c.experiment_run_phase_id == t.episodes.c.experiment_run_phase_id,
            )
            .join(
                t.muscle_actions,
                and_(
                    t.muscle_actions.c.agent_id == t.agents.c.id,
                    t.muscle_actions.c.worker == t.episodes.c.worker,
                    t.muscle_actions.c.episode == t.episodes.c.episode,
                    t.muscle_actions.c.done.is_(True),
                ),
            )
            .where(t.episodes.c.experiment_run_phase_id == phase_id)
            .group_by(t.episodes.c.id)
        ).all()
    )
    return [
        (id_, worker, episode, steps)
        for id_, worker, episode, steps in episodes
        if last_states.get(id_, 0) >= environments
        and last_actions.get(id_, 0) >= min(agents, steps)
    ]


def _evaluate_every(config: Mapping[str, Any]) -> int:
    """Training episodes between a phase's evaluation rollouts (its recorded config): its
    ``evaluate_every`` with one worker, else 0 (palaestra runs none with several)."""
    if config.get("worker") != 1:
        return 0
    return int(config.get("evaluate_every") or 0)


def first_stored(config: Mapping[str, Any] | None) -> int:
    """The stored number (evaluation rollouts counted, as ``episodes.episode`` counts) of the
    first episode a resumed phase played: its recorded ``first_episode`` counts training
    episodes (0 for a phase that began at its start)."""
    config = config or {}
    first = int(config.get("first_episode", 0))
    every = _evaluate_every(config)
    return first + first // every if every else first


def training_episodes(config: Mapping[str, Any] | None, stored: int) -> int:
    """The training episodes a worker of a phase (its recorded config) played before its
    episode of stored number ``stored`` (evaluation rollouts counted)."""
    every = _evaluate_every(config or {})
    return stored - stored // (every + 1) if every else stored


def is_rollout(config: Mapping[str, Any] | None, stored: int) -> bool:
    """Whether a worker's episode of stored number ``stored`` in a phase (its recorded
    config) is an evaluation rollout: with ``evaluate_every`` k, the one after each k
    training episodes (k, 2k + 1, ...)."""
    every = _evaluate_every(config or {})
    return bool(every) and (stored + 1) % (every + 1) == 0
