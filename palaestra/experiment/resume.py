"""Where ``experiment-resume`` continues an interrupted run instance, read from the store.

An instance that ended ``cancelled`` or ``error``, or was left ``running`` by an executor that is
gone (``stale``: its heartbeat is older than
:data:`~palaestra.core.description.limits.STALE_AFTER`), is continued by a new instance of the same
run, linked to it by ``resumed_from_id``; one instance only continues each (an instance that
another continues already is refused, and of two resumes of one instance started at once the store
writer lets the first to record its instance run: :mod:`palaestra.store.continued`). The new
instance skips the phases the old one finished and starts the phase it stopped in at the first
episode that not every worker completed (an episode completed when its ``episodes`` row and its
last step's rows are in the store: :mod:`palaestra.store.completed`, the rule the run's view
follows too), numbered as the uninterrupted run numbers it. Its Brains start from the dump their
Brain wrote at the end of the episode before (with the default ``dump`` policy, one dump per
episode, and one worker playing one game); otherwise from the newest dump of that phase. Seeds are
derived from the run's seed as always (:mod:`palaestra.core.description.seeds`), so each worker's
environment and Muscle get the seeds of the uninterrupted run, seeded afresh at the first resumed
episode.

A resumed run therefore equals the uninterrupted one when the plug-ins are deterministic, the
Brain stores its full state in its dump, and the environment and Muscle carry nothing over
from one episode to the next that their seed and the Brain's answers do not give (an
environment whose ``start_environment`` resets its state, like ``DummyEnvironment``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection, func, select

from palaestra.core import procfs
from palaestra.core.description.name_rules import dump_key
from palaestra.core.description.specs import PhaseSpec, RunSpec
from palaestra.core.errors import NotResumableError
from palaestra.core.supervision.start_methods import AUTO
from palaestra.core.texts import path_on_disk
from palaestra.core.wire import messages as m
from palaestra.experiment.experiment_run import ResumeAt
from palaestra.store import tables as t
from palaestra.store.bulk import as_sqlalchemy_errors, driver_store
from palaestra.store.completed import (
    completed_episodes,
    first_stored,
    is_rollout,
    training_episodes,
)
from palaestra.store.continued import RESUMABLE, already_resumed, continuing
from palaestra.store.direct import mark_run_end
from palaestra.store.rows import (
    local_executor,
    resumed_chain,
    shown_status,
    viewed_evaluations,
)
from palaestra.store.tables import utcnow

LOG = logging.getLogger(__name__)

__all__ = ["RESUMABLE", "NotResumableError", "ResumePlan", "load_plan", "plan_resume"]


@dataclass(frozen=True)
class ResumePlan:
    """What a resumed instance runs: the run as recorded, and where it starts."""

    run: RunSpec
    at: ResumeAt
    instance_uid: str
    """The interrupted instance."""
    status: str
    """Its (shown) status: cancelled, error or stale."""


def plan_resume(
    connection: Connection,
    run_uid: str,
    instance_uid: str | None,
    probe_timeout: float,
    on_file: Callable[[str], object] | None = None,
    start_method: str = AUTO,
) -> ResumePlan:
    """Where to continue ``run_uid``'s instance ``instance_uid`` (default: the newest);
    ``on_file`` is called with the run file's recorded path before its document is read (the
    CLI puts its directory on the import path, as ``experiment-start`` does). It only reads:
    a stale instance is marked ended by :func:`load_plan`, after.

    Raises:
        NotResumableError: No such run or instance, or the instance is finished or running,
            or another instance continues it already.
        RunFileError: The run's recorded document no longer validates (a plug-in is gone).
    """
    from palaestra.experiment.runfile import load_run_text

    record = connection.execute(
        select(*t.experiment_runs.c["id", "document", "file", "overrides"]).where(
            t.experiment_runs.c.uid == run_uid
        )
    ).one_or_none()
    if record is None:
        raise NotResumableError(f"experiment-resume: the store has no run '{run_uid}'")
    instance = _instance(connection, run_uid, record.id, instance_uid)
    status = _resumable(run_uid, instance)
    if record.file and not os.path.isabs(record.file):  # (stores before 2026-12-01)
        LOG.warning(
            "the run file was recorded as %r, relative to the directory the run was started "
            "in; plug-ins beside it are looked for in %s",
            record.file,
            os.getcwd(),
        )
    _refuse_continued(connection, run_uid, instance.uid, instance.id)
    file = path_on_disk(record.file, exists=_directory_there)  # (a name that is no UTF-8)
    if on_file is not None:
        on_file(file)
    run = load_run_text(
        record.document,
        path=file,
        probe_timeout=probe_timeout,
        start_method=start_method,
    )
    planned = _planned(connection, instance.id)
    phase_index, first = _start(connection, planned)
    if phase_index >= len(run.phases):
        raise NotResumableError(
            f"experiment-resume: instance {instance.uid} of run '{run_uid}' completed every "
            "episode of every phase; nothing is left to run"
        )
    first = min(first, _dumped_until(connection, planned, run, phase_index, first))
    first, evaluated = _evaluated(connection, planned, run.phases[phase_index], first)
    dumps = _dumps(connection, planned, run, phase_index, first)
    return ResumePlan(  # (the document has the overrides applied; they are recorded again)
        run=msgspec.structs.replace(run, overrides=record.overrides),
        at=ResumeAt(instance.id, phase_index, first, dumps, evaluated),
        instance_uid=instance.uid,
        status=status,
    )


def _resumable(run_uid: str, instance: Any) -> str:
    """The shown status of ``instance`` (a row with its ``uid``, ``status``, ``heartbeat_at``
    and ``host``), one of :data:`RESUMABLE`.

    Raises:
        NotResumableError: It is of another status (running, stopped, finished).
    """
    where = (instance.host, instance.uid)
    status = shown_status(instance.status, instance.heartbeat_at, utcnow(), where)
    if status not in RESUMABLE:
        raise NotResumableError(
            f"experiment-resume: instance {instance.uid} of run '{run_uid}' is {status}; only "
            f"an instance that ended {', '.join(RESUMABLE[:2])} or is {RESUMABLE[2]} (its "
            f"executor is gone) can be resumed{_stopped_hint(status, where)}"
        )
    return status


def _directory_there(path: str) -> bool:
    """Whether the directory of the file ``path`` is there (the run file may be gone: its
    plug-ins are looked for beside it)."""
    return os.path.isdir(os.path.dirname(path))


def _stopped_hint(status: str, where: tuple[str | None, str]) -> str:
    """How to go on with an instance whose executor is stopped on this machine."""
    found = local_executor(*where) if status == "stopped" else None
    fields = procfs.stat(found[0]) if found is not None else None
    if found is None or fields is None:
        return ""
    pid, group = found[0], int(fields[procfs.PGRP])
    return (
        f". Its executor, process {pid} on this machine, is stopped (Ctrl-Z, SIGSTOP) with "
        f"its run's processes: continue them with 'fg' in the shell it was started from, or "
        f"'kill -CONT -- -{group}'; to end the run, continue it and press Ctrl-C (or 'kill "
        f"-INT {pid}'): it ends cancelled and can then be resumed"
    )


def _refuse_continued(connection: Connection, run_uid: str, uid: str, instance_id: int) -> None:
    """Refuse an instance that another instance continues already (running, or resumed and
    ended), naming it and the newest of those continuing it (shown as ``experiment-list``
    shows them: a running one may be stale). The store writer claims the instance again when
    it records the new one (:func:`palaestra.store.continued.claim`): that decides a race."""
    found = continuing(driver_store(connection), instance_id)
    if not found:
        return
    instances = t.experiment_run_instances
    continued = []
    for continuing_id, continuing_uid, status in found:
        row = connection.execute(
            select(instances.c.heartbeat_at, instances.c.host).where(
                instances.c.id == continuing_id
            )
        ).one()
        where = (row.host, continuing_uid)
        continued.append((continuing_uid, shown_status(status, row.heartbeat_at, utcnow(), where)))
    raise NotResumableError(already_resumed(run_uid, uid, continued))


_INSTANCE_COLUMNS = ("id", "uid", "status", "heartbeat_at", "host")
"""The columns of an instance's row that say whether it can be resumed (:func:`_resumable`)."""


def _instance(connection: Connection, run_uid: str, run_id: int, uid: str | None) -> Any:
    """The instance row (newest, or the one named)."""
    found = connection.execute(
        select(*t.experiment_run_instances.c[_INSTANCE_COLUMNS])
        .where(t.experiment_run_instances.c.experiment_run_id == run_id)
        .order_by(t.experiment_run_instances.c.id)
    ).all()
    if uid is None:
        return found[-1]
    for row in found:
        if row.uid == uid or (len(uid) >= 4 and row.uid.startswith(uid)):
            return row
    known = ", ".join(row.uid for row in found)
    raise NotResumableError(
        f"experiment-resume: run '{run_uid}' has no instance '{uid}'; its instances: {known}"
    )


def _planned(connection: Connection, instance_id: int) -> int:
    """The instance whose phases say where to resume: ``instance_id``; or, where it recorded
    no phase (a resumed instance stopped before its phase began), the newest of those it
    continues that did, whose start it had not got past."""
    phases = t.experiment_run_phases
    for instance in reversed(resumed_chain(connection, instance_id)):
        if connection.scalar(
            select(phases.c.id).where(phases.c.experiment_run_instance_id == instance).limit(1)
        ):
            return instance
    return instance_id


def _start(connection: Connection, instance_id: int) -> tuple[int, int]:
    """The phase index and first episode to resume at: the instance's last phase at the first
    episode some worker did not complete (counted in training episodes, as a phase's
    ``first_episode``: evaluation rollouts are not; where that episode is an evaluation
    rollout, at the training episode before it, which the rollout follows: a resumed phase
    plays its evaluations after training episodes only); the next phase if that one
    finished."""
    phase = connection.execute(
        select(
            t.experiment_run_phases.c.id,
            t.experiment_run_phases.c.index.label("number"),
            *t.experiment_run_phases.c["status", "workers", "episodes", "config"],
        )
        .where(t.experiment_run_phases.c.experiment_run_instance_id == instance_id)
        .order_by(t.experiment_run_phases.c.index.desc())
        .limit(1)
    ).one_or_none()
    if phase is None:  # it stopped before its first phase began
        return 0, 0
    if phase.status == "finished":
        return phase.number + 1, 0
    done = completed_episodes(connection, instance_id)
    reached = []
    for worker in range(phase.workers):
        episode = first_stored(phase.config)  # (episodes' numbers count evaluation rollouts)
        while (phase.number, worker, episode) in done:
            episode += 1
        reached.append(episode)
    stored = min(reached)
    if is_rollout(phase.config, stored):  # (not completed: it follows its last training episode)
        stored -= 1
    return phase.number, training_episodes(phase.config, stored)


def _dumped_until(
    connection: Connection, instance_id: int, run: RunSpec, phase_index: int, first: int
) -> int:
    """The episode after the last one whose per-episode dump (the default ``dump`` policy with
    one worker) each such Brain's tag has in the store: a Brain's dump goes over its own
    socket, so an executor killed just after an episode completed may have lost it. ``first``
    where the phase's Brains do not dump per episode."""
    spec = run.phases[phase_index]
    per_episode = [agent.name for agent in spec.agents if agent.dump is None]
    if first == 0 or not _one_game(spec) or not per_episode:
        return first
    phase = _recorded_phase(connection, instance_id, phase_index)
    if phase is None:
        return first
    phase_id, since = phase
    counts = connection.execute(
        select(func.count(t.brain_states.c.id))
        .join(t.agents, t.brain_states.c.agent_id == t.agents.c.id)
        .where(t.agents.c.experiment_run_phase_id == phase_id, t.agents.c.name.in_(per_episode))
        .group_by(t.agents.c.id, t.brain_states.c.tag)
    ).all()
    return min([first, *(since + int(n) for (n,) in counts)])


def _evaluated(
    connection: Connection, instance_id: int, spec: PhaseSpec, first: int
) -> tuple[int, tuple[tuple[m.AgentEvaluated, ...], ...]]:
    """The episode to start the phase at, ``first`` or before, and the agents' results of
    the evaluations (``evaluate_every``) the phase completed before it, evaluation 0, 1, ...,
    read from the run's view of the instance (those of the rollouts it replays not counted):
    its termination conditions are told them again. An evaluation whose results are not all
    in the store (its rollout completed, but the executor was killed before the store writer
    took them) is played again, from the training episode before its rollout, as a rollout
    not completed is."""
    every = spec.config.evaluate_every if spec.config.worker == 1 else 0
    if not every or first < every:
        return first, ()
    by_evaluation: dict[int, dict[str, m.AgentEvaluated]] = {}
    for row in viewed_evaluations(connection, instance_id, spec.index):
        metrics = row["metrics"]
        by_evaluation.setdefault(row["evaluation"], {})[row["agent"]] = m.AgentEvaluated(
            agent=row["agent"],
            evaluation=row["evaluation"],
            result=metrics is not None,
            metrics=dict(metrics or {}),
            checkpoint_id=row["checkpoint_id"],
            checkpoint_hash=row["checkpoint_hash"],
        )
    results: list[tuple[m.AgentEvaluated, ...]] = []
    for evaluation in range(first // every):
        found = by_evaluation.get(evaluation, {})
        if any(agent.name not in found for agent in spec.agents):
            first = (evaluation + 1) * every - 1
            LOG.warning(
                "the store lacks results of evaluation %d of phase %d: it is played again, "
                "the phase resumes at episode %d",
                evaluation,
                spec.index,
                first,
            )
            break
        results.append(tuple(found[agent.name] for agent in spec.agents))
    return first, tuple(results)


def _dumps(
    connection: Connection, instance_id: int, run: RunSpec, phase_index: int, first: int
) -> dict[str, tuple[dict[str, Any] | None, dict[str, bytes], str]] | None:
    """Per agent, the dumps of the phase its Brain starts from at episode ``first``; None
    (look them up as a fresh phase does) at the phase's start. An agent whose Brain stored no
    dump in the phase (a test phase's Brain that learns nothing, one that dumps only once it
    learned) is left out: it starts from what the phase started from, the phase before's
    dumps (or its ``load:``), as the run's start of the phase finds them."""
    spec = run.phases[phase_index]
    if first == 0 or _recorded_phase(connection, instance_id, phase_index) is None:
        return None
    found: dict[str, tuple[dict[str, Any] | None, dict[str, bytes], str]] = {}
    for agent in spec.agents:
        per_episode = agent.dump is None and _one_game(spec)
        chosen = _chosen_dumps(
            connection, instance_id, phase_index, agent.name, first, per_episode
        )
        where = f"agent '{agent.name}' in phase {phase_index} of the interrupted instance"
        if not chosen:
            continue
        loaded = {
            "run": run.uid,
            "agent": agent.name,
            "phase": phase_index,
            "brain_state_id": max(row.id for row in chosen.values()),
        }
        found[agent.name] = (loaded, {dump_key(t): r.dump for t, r in chosen.items()}, where)
    return found


def _chosen_dumps(
    connection: Connection,
    instance_id: int,
    phase_index: int,
    agent: str,
    first: int,
    per_episode: bool,
) -> dict[str, Any]:
    """The agent's dumps (a row per tag) to start episode ``first`` of the phase from: the
    instance's; where its phase played no episode before ``first`` or dumped nothing (an
    instance that was itself resumed and stopped before its first dump), those of the
    instance it continues, which that instance started from."""
    for instance in reversed(resumed_chain(connection, instance_id)):
        phase = _recorded_phase(connection, instance, phase_index)
        if phase is None or (first <= phase[1] and per_episode):
            continue
        phase_id, since = phase
        rows = connection.execute(
            select(t.brain_states.c.id, t.brain_states.c.tag, t.brain_states.c.dump)
            .join(t.agents, t.brain_states.c.agent_id == t.agents.c.id)
            .where(t.agents.c.experiment_run_phase_id == phase_id, t.agents.c.name == agent)
            .order_by(t.brain_states.c.id)
        ).all()
        by_tag: dict[str, list[Any]] = {}
        for row in rows:
            by_tag.setdefault(row.tag, []).append(row)
        if by_tag:
            return {
                tag: (
                    dumps[first - since - 1]
                    if per_episode and first - since <= len(dumps)
                    else dumps[-1]
                )
                for tag, dumps in by_tag.items()
            }
    return {}


def _one_game(spec: PhaseSpec) -> bool:
    """Whether the phase plays one game at a time (one worker, one game per worker): only then
    is a Brain's n-th per-episode dump the one of episode n. With several, the games' episodes
    end in turn and each end dumps, so the phase's newest dump is taken, as the docs say."""
    return spec.config.worker == 1 and spec.config.envs_per_worker == 1


def _recorded_phase(
    connection: Connection, instance_id: int, phase_index: int
) -> tuple[int, int] | None:
    """The id of the instance's phase ``phase_index`` and the episode it began at (its
    ``first_episode``: a resumed phase's), or None if the store has no such phase."""
    phases = t.experiment_run_phases
    phase = connection.execute(
        select(phases.c.id, phases.c.config).where(
            phases.c.experiment_run_instance_id == instance_id, phases.c.index == phase_index
        )
    ).one_or_none()
    if phase is None:
        return None
    return int(phase.id), int((phase.config or {}).get("first_episode", 0))


def _end_stale(connection: Connection, run_uid: str, instance_id: int) -> None:
    """Mark the stale instance ``instance_id`` ended (``error``: its executor is gone) if it
    is stale still, read again in this (writing) transaction: since the plan was read, it
    may have ended otherwise, or been deleted, or its executor sent a heartbeat again.

    Raises:
        NotResumableError: It is no longer in the store, or no longer resumable.
    """
    columns = t.experiment_run_instances.c
    instance = connection.execute(
        select(*columns[_INSTANCE_COLUMNS]).where(columns.id == instance_id)
    ).one_or_none()
    if instance is None:
        raise NotResumableError(
            f"experiment-resume: the instance of run '{run_uid}' to resume (id {instance_id}) "
            "is no longer in the store (deleted meanwhile)"
        )
    if _resumable(run_uid, instance) == "stale":
        _mark_stale(connection, instance_id)


def _mark_stale(connection: Connection, instance_id: int) -> None:
    """End a stale instance: its executor is gone."""
    reason = "its executor died (no heartbeat); continued by experiment-resume"
    store = driver_store(connection)
    with as_sqlalchemy_errors(store, "experiment_run_instances"):  # (the caller's StoreError)
        mark_run_end(store, instance_id, "error", reason, utcnow())


def load_plan(
    store_uri: str,
    run_uid: str,
    instance_uid: str | None,
    probe_timeout: float,
    on_file: Callable[[str], object] | None = None,
    start_method: str = AUTO,
) -> ResumePlan:
    """:func:`plan_resume` on the store at ``store_uri``, from one snapshot of it (one
    transaction: what another connection commits meanwhile is not seen); then a stale
    instance is marked ended (``error``: its executor is gone), in a transaction of its own
    that writes: on SQLite one that read a snapshot could not write once another connection
    had committed, and the plan (the run file loaded, its environments probed) must not hold
    the store's write lock, for which the store writers of other runs wait.

    Raises:
        NotResumableError: As :func:`plan_resume`; or the stale instance was deleted, or
            became running again, meanwhile.
        StoreError: The store cannot be read, or is of another schema revision.
    """
    from palaestra.store.rows import transaction

    with transaction(store_uri) as connection:
        plan = plan_resume(connection, run_uid, instance_uid, probe_timeout, on_file, start_method)
    if plan.status == "stale":
        with transaction(store_uri, write=True) as connection:
            _end_stale(connection, run_uid, plan.at.instance_id)
    return plan
