"""The store's row layer: the SQL that reads and deletes runs, with rows as plain dicts.

Every run-scoped function takes the run's uid first, then keyword-only filters, the store
(``store_uri``: a URI, an open :class:`~sqlalchemy.Engine`, or None for the configured store)
and ``instance`` (an instance uid; default: the run's newest instance). Filters become WHERE
clauses; nothing is filtered in Python. Rows come back ordered by phase, agent or environment
(in the order the run declared them), worker, episode and step; JSON values as plain Python
values; timestamps timezone-aware UTC. No pandas here: :mod:`palaestra.store.query` builds its
DataFrames on these functions, and the CLI exports from them directly.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import re
import socket
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    CursorResult,
    Engine,
    Integer,
    Select,
    String,
    Text,
    cast,
    delete,
    false,
    func,
    or_,
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from palaestra.core import procfs
from palaestra.core.description import names
from palaestra.core.description.config import (
    check_store_uri_parts,
    load_runtime_config,
    normal_store_uri,
)
from palaestra.core.description.limits import STALE_AFTER
from palaestra.core.errors import (
    InvalidInputError,
    StoreError,
    did_you_mean,
)
from palaestra.store import tables as t
from palaestra.store.completed import (
    completed_episodes,
    first_stored,
    is_rollout,
    training_episodes,
)
from palaestra.store.engine import NOT_A_URL, make_engine, mask_uri, reason, sqlite_file
from palaestra.store.schema import require_readable
from palaestra.store.tables import utcnow

Row = dict[str, Any]
StoreURI = str | Engine
Match = int | str | Sequence[int | str]
"""A filter value: one value, or a sequence of values any of which matches."""

KNOWN_RUNS_SHOWN = 5
EXPAND_PREFIXES = {
    "sensor_readings": "sensor.",
    "actuator_setpoints": "setpoint.",
    "sensors": "sensor.",
    "setpoints": "setpoint.",
    "statistics": "statistic.",
    "metrics": "metric.",
}
"""The JSON columns :func:`expand` splits, and the prefix of the columns it makes."""

_Instance = t.experiment_run_instances
_Phase = t.experiment_run_phases


@dataclass(frozen=True)
class Listing:
    """How the rows of one table of a run are read: one description per table, one reader.

    Args:
        model: The table.
        columns: What is selected, in the order of the rows' columns.
        order: The rows' order (phase, the agent or environment in the run's order, worker,
            episode, step).
        filters: The keyword filters a reader takes, by name: the column each matches
            (``_Phase``: a phase's index or name).
        via: The agent or environment between the table and its phase (None: the table
            names its phase itself).
        where: Conditions every row meets.
    """

    model: Any
    columns: tuple[Any, ...]
    order: tuple[Any, ...]
    filters: dict[str, Any] = field(default_factory=dict)
    via: Any = None
    where: tuple[Any, ...] = ()

    def statement(self, instance_id: int, extra: Sequence[Any] = (), **match: Any) -> Select[Any]:
        """The SELECT of the rows of instance ``instance_id`` (with ``extra`` columns) that
        match the filters given (None: any)."""
        chosen = select(*self.columns, *extra).select_from(self.model)
        owner = self.model
        if self.via is not None:
            key = "agent_id" if self.via is t.agents else "environment_id"
            chosen = chosen.join(self.via, self.model.c[key] == self.via.c.id)
            owner = self.via
        chosen = (
            chosen.join(_Phase, owner.c.experiment_run_phase_id == _Phase.c.id)
            .where(_Phase.c.experiment_run_instance_id == instance_id, *self.where)
            .order_by(*self.order)
        )
        return _filtered(chosen, [(self.filters[name], value) for name, value in match.items()])

    def read(
        self,
        run: str,
        store_uri: StoreURI | None,
        instance: str | None,
        extra: Sequence[Any] = (),
        **match: Match | None,
    ) -> Rows:
        """The rows of the run's named instance, or of its newest and those it resumed."""
        return _fetch_run(store_uri, run, instance, lambda at: self.statement(at, extra, **match))


def _of(model: Any, names: str) -> tuple[Any, ...]:
    """The columns of ``model`` named (space-separated)."""
    return tuple(model.c[name] for name in names.split())


_PHASE: tuple[Any, ...] = (_Phase.c.index.label("phase"), _Phase.c.name.label("phase_name"))
_PHASE_MODE: tuple[Any, ...] = (*_PHASE, _Phase.c.mode)
_AGENT = t.agents.c.name.label("agent")
_ENVIRONMENT = t.environments.c.uid.label("environment")
_BY_PHASE = {"phase": _Phase, "mode": _Phase.c.mode}
_STEP_FILTERS = ("source", "worker", "episode")
_WHO = {"agent": t.agents.c.name, "environment": t.environments.c.uid}

AGENTS = Listing(
    t.agents,
    (*_PHASE, _AGENT, *_of(t.agents, "brain muscle objective config seeds loaded_from")),
    order=(_Phase.c.index, t.agents.c.id),
    filters={"phase": _Phase, "agent": t.agents.c.name},
)
ENVIRONMENTS = Listing(
    t.environments,
    (*_PHASE, _ENVIRONMENT, *_of(t.environments, "name params seeds")),
    order=(_Phase.c.index, t.environments.c.id),
    filters={"phase": _Phase, "environment": t.environments.c.uid},
)
WORLD_STATES = Listing(
    t.world_states,
    (
        *_PHASE_MODE,
        _ENVIRONMENT,
        *_of(t.world_states, "worker episode step sensors setpoints rewards done terminated"),
        *_of(t.world_states, "truncated late_by"),
    ),
    order=(_Phase.c.index, t.environments.c.id, *_of(t.world_states, "worker episode step id")),
    filters=_BY_PHASE
    | _WHO
    | {"worker": t.world_states.c.worker, "episode": t.world_states.c.episode},
    via=t.environments,
)
LATENESS = Listing(
    t.world_states,
    (*_PHASE_MODE, *_of(t.world_states, "worker episode late_by")),
    order=(_Phase.c.index,),
    via=t.environments,
    where=(t.world_states.c.late_by.is_not(None),),
)
MUSCLE_ACTIONS = Listing(
    t.muscle_actions,
    (
        *_PHASE_MODE,
        _AGENT,
        *_of(t.muscle_actions, "worker episode step sensor_readings actuator_setpoints rewards"),
        *_of(t.muscle_actions, "reward objective done terminated truncated stale_policy"),
    ),
    order=(_Phase.c.index, t.agents.c.id, *_of(t.muscle_actions, "worker episode step id")),
    filters=_BY_PHASE
    | _WHO
    | {"worker": t.muscle_actions.c.worker, "episode": t.muscle_actions.c.episode},
    via=t.agents,
)
EPISODES = Listing(
    t.episodes,
    (
        *_PHASE_MODE,
        *_of(t.episodes, "worker episode started_at ended_at steps terminated truncated rewards"),
    ),
    order=(t.episodes.c.started_at, _Phase.c.index, t.episodes.c.worker, t.episodes.c.episode),
    filters=_BY_PHASE | {"worker": t.episodes.c.worker},
)
BRAIN_STATES = Listing(
    t.brain_states,
    (t.brain_states.c.id, *_PHASE, _AGENT, *_of(t.brain_states, "tag path created_at")),
    order=(_Phase.c.index, t.agents.c.id, t.brain_states.c.id),
    filters={"phase": _Phase, "agent": t.agents.c.name},
    via=t.agents,
)
STATISTICS = Listing(
    t.statistics,
    (*_PHASE_MODE, _AGENT, *_of(t.statistics, "source worker episode step statistics")),
    order=(_Phase.c.index, t.agents.c.id, *_of(t.statistics, "source worker episode step id")),
    filters=_BY_PHASE | _WHO | {name: t.statistics.c[name] for name in _STEP_FILTERS},
    via=t.agents,
)
EVALUATIONS = Listing(
    t.evaluations,
    (
        *_PHASE_MODE,
        _AGENT,
        *_of(t.evaluations, "evaluation training_episodes worker episode metrics"),
        *_of(t.evaluations, "checkpoint_id checkpoint_hash at"),
    ),
    order=(_Phase.c.index, t.agents.c.id, t.evaluations.c.evaluation, t.evaluations.c.id),
    filters={"phase": _Phase, "agent": t.agents.c.name, "worker": t.evaluations.c.worker},
    via=t.agents,
)
PLUGIN_RECORDS = Listing(
    t.plugin_records,
    (*_PHASE_MODE, *_of(t.plugin_records, "source worker episode step key value")),
    order=(_Phase.c.index, *_of(t.plugin_records, "source worker episode id")),
    filters={"phase": _Phase} | {n: t.plugin_records.c[n] for n in (*_STEP_FILTERS, "key")},
)
RECORDING_GAPS = Listing(
    t.recording_gaps,
    (*_PHASE_MODE, *_of(t.recording_gaps, "worker from_episode from_step to_episode to_step")),
    order=(_Phase.c.index, t.recording_gaps.c.worker, t.recording_gaps.c.id),
)
CODE_RELOADS = Listing(
    t.code_reloads,
    (*_PHASE_MODE, *_of(t.code_reloads, "source worker episode step module path ok error at")),
    order=(_Phase.c.index, t.code_reloads.c.at, t.code_reloads.c.id),
    filters={
        "phase": _Phase,
        "source": t.code_reloads.c.source,
        "worker": t.code_reloads.c.worker,
    },
)


class Rows(list[Row]):
    """The rows of a query as dicts, with the names of its columns (also when it has no rows).

    Args:
        rows: The rows.
        columns: The column names, in order; every row has these keys.
    """

    def __init__(self, rows: Iterable[Row] = (), columns: Sequence[str] = ()) -> None:
        super().__init__(rows)
        self.columns: tuple[str, ...] = tuple(columns)


class UnknownRunError(InvalidInputError, LookupError):
    """No run (or no instance of it) with the uid asked for is in the store."""


class RunStillRunningError(InvalidInputError):
    """A run asked to be deleted is still running: an instance of it is marked ``running``."""


# --- the store -------------------------------------------------------------------------------


def resolve_store_uri(store_uri: StoreURI | None = None) -> StoreURI:
    """The store to read: ``store_uri`` if given, else the one configured.

    The configured store is the runtime configuration's (:func:`~palaestra.core.description.config.
    load_runtime_config`, the one reader of it): the environment variable
    ``PALAESTRA_STORE_URI``, else ``store_uri`` in ``./palaestra-runtime.yaml``, else
    ``sqlite:///palaestra.db``.

    Raises:
        RuntimeConfigError: ``./palaestra-runtime.yaml`` is unreadable or invalid, or
            ``store_uri`` is a URI the store writer would read otherwise (a SQLite URI's query,
            a port that is no number: :func:`~palaestra.core.description.config.
            check_store_uri_parts`).
    """
    if isinstance(store_uri, str):
        uri = normal_store_uri(store_uri)
        check_store_uri_parts(uri)
        return uri
    if store_uri is not None:  # (an engine)
        return store_uri
    return load_runtime_config().store_uri


# --- experiments and runs --------------------------------------------------------------------


def experiments(*, store_uri: StoreURI | None = None) -> Rows:
    """One row per experiment, oldest first.

    Returns:
        ``experiment_uid``, ``created_at``, ``runs`` and ``instances`` (how many of each).
    """
    statement = (
        select(
            t.experiments.c.uid.label("experiment_uid"),
            t.experiments.c.created_at,
            func.count(func.distinct(t.experiment_runs.c.id)).label("runs"),
            func.count(_Instance.c.id).label("instances"),
        )
        .select_from(t.experiments)
        .outerjoin(t.experiment_runs, t.experiment_runs.c.experiment_id == t.experiments.c.id)
        .outerjoin(_Instance, _Instance.c.experiment_run_id == t.experiment_runs.c.id)
        .group_by(t.experiments.c.id, t.experiments.c.uid, t.experiments.c.created_at)
        .order_by(t.experiments.c.id)
    )
    with _connection(store_uri) as connection:
        return _rows(connection.execute(statement))


def runs(
    *,
    experiment: Match | None = None,
    run: Match | None = None,
    store_uri: StoreURI | None = None,
) -> Rows:
    """One row per run instance, oldest first, optionally of some experiments or runs only.

    Returns:
        ``run_uid``, ``experiment_uid``, ``instance_uid``, ``status`` (``stale`` for an
        instance left ``running`` by an executor that is gone: see :func:`shown_status`),
        ``reason``,
        ``started_at``, ``finished_at``, ``duration_s`` (None while running), ``phases`` (how
        many started), ``episodes`` (the sum over those phases of episodes × workers),
        ``palaestra_version`` and ``code_revision``.
    """
    of_instance = _Phase.c.experiment_run_instance_id == _Instance.c.id
    phase_count = select(func.count(_Phase.c.id)).where(of_instance).scalar_subquery()
    episode_sum = (
        select(func.coalesce(func.sum(_Phase.c.episodes * _Phase.c.workers), 0))
        .where(of_instance)
        .scalar_subquery()
    )
    statement = (
        select(
            t.experiment_runs.c.uid.label("run_uid"),
            t.experiments.c.uid.label("experiment_uid"),
            _Instance.c.uid.label("instance_uid"),
            *_of(_Instance, "status reason started_at finished_at"),
            phase_count.label("phases"),
            episode_sum.label("episodes"),
            *_of(_Instance, "palaestra_version code_revision heartbeat_at host"),
        )
        .select_from(_Instance)
        .join(t.experiment_runs, _Instance.c.experiment_run_id == t.experiment_runs.c.id)
        .join(t.experiments, t.experiment_runs.c.experiment_id == t.experiments.c.id)
        .order_by(_Instance.c.id)
    )
    statement = _filtered(
        statement, [(t.experiments.c.uid, experiment), (t.experiment_runs.c.uid, run)]
    )
    with _connection(store_uri) as connection:
        found = _rows(connection.execute(statement))
    now, executors = utcnow(), Executors()
    for row in found:
        where = (row.pop("host"), row["instance_uid"])
        beat = row.pop("heartbeat_at")
        row["status"] = shown_status(row["status"], beat, now, where, executors)
    return _with_durations(Rows(found, found.columns[:-2]))


def shown_status(
    status: str,
    heartbeat_at: dt.datetime | None,
    now: dt.datetime,
    executor: tuple[str | None, str] | None = None,
    executors: Executors | None = None,
) -> str:
    """``status``, or for a ``running`` instance whose heartbeat is older than
    :data:`~palaestra.core.description.limits.STALE_AFTER` seconds: ``stale`` (its executor is
    gone), or, where ``executor`` (the instance's host and uid) finds its executor on this
    machine (``executors``: those a listing looked up once), ``stopped`` (Ctrl-Z, SIGSTOP: it
    goes on when continued) or ``running`` (it runs: its heartbeat lags). An instance without
    a heartbeat (recorded before store revision 0007) stays ``running``."""
    if status == "running" and heartbeat_at is not None:
        if (now - heartbeat_at).total_seconds() > STALE_AFTER:
            found = (executors or Executors()).of(*executor) if executor is not None else None
            if found is None:
                return "stale"
            return "stopped" if found[1] in STOPPED else "running"
    return status


STOPPED = ("T", "t")
"""The states of a stopped process (``proc(5)``: by a signal, by a debugger)."""


class Executors:
    """The executors living on this machine (their titles name their instances: see
    :data:`~palaestra.core.description.names.EXECUTOR`), looked up in ``/proc`` once, when
    first asked."""

    def __init__(self) -> None:
        self.found: dict[str, tuple[int, str]] | None = None

    def of(self, host: str | None, instance_uid: str) -> tuple[int, str] | None:
        """The pid and state letter of instance ``instance_uid``'s executor where it lives on
        this machine (``host`` is this machine's name); None where it is gone or elsewhere (or
        ``/proc`` cannot tell: not Linux)."""
        if host != socket.gethostname():
            return None
        if self.found is None:
            self.found = procfs.titled(names.EXECUTOR)
        return self.found.get(instance_uid)


def local_executor(host: str | None, instance_uid: str) -> tuple[int, str] | None:
    """:meth:`Executors.of`, looked up now."""
    return Executors().of(host, instance_uid)


def run_record(run: str, *, store_uri: StoreURI | None = None) -> Row:
    """What the store keeps of a run itself (not of an instance).

    Returns:
        ``run_uid``, ``experiment_uid``, ``file`` (the run file's path), ``seed``,
        ``overrides`` (what a sweep set; None if run as written) and ``document`` (the run
        file's text).

    Raises:
        UnknownRunError: The store has no such run.
    """
    statement = (
        select(
            t.experiment_runs.c.uid.label("run_uid"),
            t.experiments.c.uid.label("experiment_uid"),
            *t.experiment_runs.c["file", "seed", "overrides", "document"],
        )
        .join(t.experiments, t.experiment_runs.c.experiment_id == t.experiments.c.id)
        .where(t.experiment_runs.c.uid == run)
    )
    with _connection(store_uri) as connection:
        found = _rows(connection.execute(statement))
        if not found:
            raise UnknownRunError(_unknown_run(connection, run))
        return found[0]


# --- one run: its phases, agents and environments ------------------------------------------


def phases(run: str, *, store_uri: StoreURI | None = None, instance: str | None = None) -> Rows:
    """The phases of a run instance, by index.

    Returns:
        ``phase`` (the index), ``name``, ``mode``, ``workers``, ``episodes``, ``status``,
        ``started_at``, ``finished_at``, ``duration_s`` and ``config``.
    """

    def statement(instance_id: int) -> Select[Any]:
        return (
            select(
                _Phase.c.index.label("phase"),
                *_of(_Phase, "name mode workers episodes status started_at finished_at config"),
            )
            .where(_Phase.c.experiment_run_instance_id == instance_id)
            .order_by(_Phase.c.index)
        )

    return _with_durations(_fetch_run(store_uri, run, instance, statement))


def episodes_done(*, run: Match | None = None, store_uri: StoreURI | None = None) -> Rows:
    """How many episodes each phase of each run instance has done (all workers together).

    An episode is done when the ``episodes`` table has its row (written as it ends). Phases
    without such rows of instances recorded before revision 0007 (perhaps before 0005, when
    there were none) count the worker episodes that have muscle actions, an episode cut short
    by an interruption included; a later instance's such phase has done none.

    A phase with evaluation rollouts (``evaluate_every``) counts its training episodes in
    ``done``, the episodes its plan has, and the rollouts in ``evaluations`` (each worker's
    stored in its sequence of episodes, after every ``evaluate_every`` of its training ones).

    Returns:
        ``instance_uid``, ``phase`` (the index), ``done`` and ``evaluations``, for phases with
        any episode: by instance, oldest first (as :func:`runs`), then by phase.
    """
    with_episodes = (
        select(_Instance.c.uid.label("instance_uid"), _Phase.c.index.label("phase"))
        .add_columns(func.count(t.episodes.c.id).label("done"), t.episodes.c.worker)
        .add_columns(_Phase.c.config)
        .select_from(t.episodes)
        .join(_Phase, t.episodes.c.experiment_run_phase_id == _Phase.c.id)
    )
    acted = (
        select(t.agents.c.experiment_run_phase_id.label("phase_id"), t.muscle_actions.c.worker)
        .add_columns(t.muscle_actions.c.episode)
        .join(t.agents, t.muscle_actions.c.agent_id == t.agents.c.id)
        .where(
            ~t.agents.c.experiment_run_phase_id.in_(select(t.episodes.c.experiment_run_phase_id))
        )
        .distinct()
        .subquery()
    )
    with_actions = (
        select(_Instance.c.uid.label("instance_uid"), _Phase.c.index.label("phase"))
        .add_columns(func.count().label("done"))
        .select_from(acted)
        .join(_Phase, acted.c.phase_id == _Phase.c.id)
        .where(_Instance.c.heartbeat_at.is_(None))  # (see _legacy: later ones ended none)
    )
    phases: dict[tuple[int, int], Row] = {}  # (by instance id and phase index: their order)
    with _connection(store_uri) as connection:
        for statement, by in (
            (with_episodes, (t.episodes.c.worker, _Phase.c.id)),
            (with_actions, ()),
        ):
            statement = (
                statement.add_columns(_Instance.c.id.label("instance_id"))
                .join(_Instance, _Phase.c.experiment_run_instance_id == _Instance.c.id)
                .join(t.experiment_runs, _Instance.c.experiment_run_id == t.experiment_runs.c.id)
                .group_by(_Instance.c.id, _Instance.c.uid, _Phase.c.index, *by)
            )
            statement = _filtered(statement, [(t.experiment_runs.c.uid, run)])
            _count_phases(phases, _rows(connection.execute(statement)))
    return Rows(
        (phases[key] for key in sorted(phases)),
        columns=("instance_uid", "phase", "done", "evaluations"),
    )


def _count_phases(phases: dict[tuple[int, int], Row], workers: Rows) -> None:
    """Add to ``phases`` (by instance id and phase index) each phase's ``done`` and
    ``evaluations`` from its workers' counts of stored episodes (each with the phase's
    ``config``; rows without one: ``done`` as it is)."""
    for row in workers:
        count = row["done"]
        training = training_episodes(row["config"], count) if "config" in row else count
        key = (row["instance_id"], row["phase"])
        phase = phases.setdefault(
            key,
            {"instance_uid": row["instance_uid"], "phase": key[1], "done": 0, "evaluations": 0},
        )
        phase["done"] += training
        phase["evaluations"] += count - training


def agents(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The agents of each phase of a run instance.

    Args:
        phase: Phase index (int) or name (str), or several.
        agent: Agent name, or several.

    Returns:
        ``phase``, ``phase_name``, ``agent``, ``brain``, ``muscle``, ``objective``, ``config``,
        ``seeds`` and ``loaded_from`` (the brain dump it started from, or None).
    """
    return AGENTS.read(run, store_uri, instance, phase=phase, agent=agent)


def environments(
    run: str,
    *,
    phase: Match | None = None,
    environment: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The environments of each phase of a run instance.

    Returns:
        ``phase``, ``phase_name``, ``environment`` (its uid), ``name`` (its class),
        ``params`` and ``seeds`` (one per worker).
    """
    return ENVIRONMENTS.read(run, store_uri, instance, phase=phase, environment=environment)


# --- one run: its records --------------------------------------------------------------------


def world_states(
    run: str,
    *,
    phase: Match | None = None,
    episode: Match | None = None,
    environment: Match | None = None,
    worker: Match | None = None,
    mode: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The world states (one row per environment step) of a run instance, by phase,
    environment, worker, episode and step.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        episode: Episode number(s).
        environment: Environment uid(s).
        worker: Worker number(s).
        mode: Phase mode(s), e.g. ``"train"``.
        expand: Replace ``sensors`` and ``setpoints`` by one column per uid
            (``sensor.<uid>``, ``setpoint.<uid>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``environment``, ``worker``, ``episode``,
        ``step``, ``sensors``, ``setpoints``, ``rewards`` (by uid; a list of ``{"uid": ...,
        "value": ...}`` where the environment gave one uid twice), ``done``, ``terminated`` and
        ``truncated`` (how the environment said its episode ended; None where it does not say,
        and in rows of stores before revision 0005), ``late_by`` (in a paced phase: seconds the
        step began after its due time, 0.0 on time; else None). A phase with
        ``record: {every: N}`` has the rows of every N-th step and the last only, one with
        ``record: episodes`` none.
    """
    found = WORLD_STATES.read(
        run,
        store_uri,
        instance,
        phase=phase,
        mode=mode,
        environment=environment,
        worker=worker,
        episode=episode,
    )
    return expanded(found) if expand else found


def muscle_actions(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    episode: Match | None = None,
    mode: Match | None = None,
    worker: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The muscle actions (one row per agent step) of a run instance, by phase, agent, worker,
    episode and step.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        agent: Agent name(s).
        episode: Episode number(s).
        mode: Phase mode(s), e.g. ``"test"``.
        worker: Worker number(s).
        expand: Replace ``sensor_readings`` and ``actuator_setpoints`` by one column per uid
            (``sensor.<uid>``, ``setpoint.<uid>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``worker``, ``episode``, ``step``,
        ``sensor_readings``, ``actuator_setpoints``, ``rewards`` (by uid; where a uid
        repeats, two environments of the phase naming a reward alike, a list of each reward as
        ``{"uid": ..., "value": ...}`` in the phase's order of environments), ``reward`` (the
        step's reward total, every reward counted), ``objective``, ``done``, ``terminated``
        and ``truncated`` (how the episode ended, in its last row; False before; None where
        the environments do not say), ``stale_policy`` (with ``update_lag: async``: whether
        the Muscle acted before its Brain's answer to an earlier step arrived; else None).
        A phase with ``record: {every: N}`` has the rows of every N-th step and the last
        only, one with ``record: episodes`` none.
    """
    found = MUSCLE_ACTIONS.read(
        run,
        store_uri,
        instance,
        phase=phase,
        mode=mode,
        agent=agent,
        worker=worker,
        episode=episode,
    )
    return expanded(found) if expand else found


def episodes(
    run: str,
    *,
    phase: Match | None = None,
    worker: Match | None = None,
    mode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The episodes of a run instance (one row per phase, worker and episode), in the order
    they started.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``worker``, ``episode``, ``started_at`` and
        ``ended_at`` (UTC), ``steps`` (of the world), ``terminated`` and ``truncated`` (None
        where the environments do not say) and ``rewards`` (each agent's episode reward, the
        sum of its steps' ``reward``, by agent name; an agent without a numeric reward is
        absent). Every phase has them, whatever it ``record``-ed; stores before revision 0005
        have none.
    """
    return EPISODES.read(run, store_uri, instance, phase=phase, mode=mode, worker=worker)


EPISODE_REWARD_COLUMNS = tuple(
    "phase phase_name mode agent worker episode steps reward objective evaluation".split()
)


def episode_rewards(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    mode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """Per phase, agent, worker and episode: its steps and the sums of reward and objective.

    A phase that recorded every step (``record: all``, the default) is summed by the database
    from ``muscle_actions`` (GROUP BY; steps without a reward or objective count as none, but
    an episode whose reward the run summed to NaN, its ``episodes`` row's, is NaN). A
    phase that recorded fewer (``record: {every: N}`` or ``episodes``) reads its ``episodes``
    rows: the reward is the same sum, made as the episode ran; ``steps`` is then the world's
    steps in the episode and ``objective`` None. So does an episode with steps recorded while
    recording was paused (``recording_gaps``). ``evaluation`` is true for an evaluation
    rollout (``evaluate_every``: stored as an episode of its worker, played in test mode).

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``worker``, ``episode``, ``steps``,
        ``reward``, ``objective`` and ``evaluation``.
    """
    merged: list[Row] = []
    filters = [(_Phase, phase), (_Phase.c.mode, mode), (t.agents.c.name, agent)]
    with _connection(store_uri) as connection:
        chain = _instances(connection, run, instance)
        for at, one in enumerate(chain):
            partial = _partly_recorded(connection, one)
            summed = _nan_sums(_rows(connection.execute(_summed_rewards(one, partial, filters))))
            _nan_episodes(connection, one, summed)
            _unrecorded_episodes(connection, one, summed)
            if not _finished(connection, one):  # an episode cut short is not one of them
                ended = _ended_episodes(connection, one)
                # (phases of a legacy instance without episodes rows: all it has)
                counted = {index for index, _, _ in ended} if _legacy(connection, one) else None
                summed = [
                    r
                    for r in summed
                    if (r["phase"], r["worker"], r["episode"]) in ended
                    or (counted is not None and r["phase"] not in counted)
                ]
            found = [*summed, *_episode_reward_rows(connection, one, partial, filters)]
            if at < len(chain) - 1:  # a resumed instance: see _chain_rows
                start = _resume_start(connection, chain[at + 1])
                done = completed_episodes(connection, one)
                found = [row for row in found if _kept(row, start, done)]
            merged.extend(_rollouts_marked(connection, one, _agent_ranks(found)))
    order = ("phase", "agent_order", "worker", "episode")
    merged.sort(key=lambda row: tuple(row[k] for k in order))
    return Rows(
        ({name: row[name] for name in EPISODE_REWARD_COLUMNS} for row in merged),
        EPISODE_REWARD_COLUMNS,
    )


def _rollouts_marked(connection: Connection, instance_id: int, found: list[Row]) -> list[Row]:
    """``found`` (rows of the instance's episodes) with ``evaluation``: whether each is an
    evaluation rollout of its phase (:func:`~palaestra.store.completed.is_rollout`)."""
    configs = dict(
        connection.execute(
            select(_Phase.c.index, _Phase.c.config).where(
                _Phase.c.experiment_run_instance_id == instance_id
            )
        ).all()
    )
    for row in found:
        row["evaluation"] = is_rollout(configs.get(row["phase"]), row["episode"])
    return found


def _agent_ranks(found: list[Row]) -> list[Row]:
    """``found`` with ``agent_order`` the agent's place in its phase (from the agents' ids), the
    same in every instance of the run."""
    ids: dict[int, set[int]] = {}
    for row in found:
        ids.setdefault(row["phase"], set()).add(row["agent_order"])
    ranks = {phase: sorted(of_phase) for phase, of_phase in ids.items()}
    return [row | {"agent_order": ranks[row["phase"]].index(row["agent_order"])} for row in found]


def _finished(connection: Connection, instance_id: int) -> bool:
    status = connection.scalar(select(_Instance.c.status).where(_Instance.c.id == instance_id))
    return bool(status == "finished")


def _legacy(connection: Connection, instance_id: int) -> bool:
    """Whether the instance was recorded before its episodes got ``episodes`` rows as they
    ended (stores before revision 0005): it has no heartbeat (revision 0007 on, every instance
    has one from its start). A later instance's phase without such rows ended no episode, so
    the steps it has are of one cut short."""
    beat = connection.scalar(select(_Instance.c.heartbeat_at).where(_Instance.c.id == instance_id))
    return beat is None


def _ended_episodes(connection: Connection, instance_id: int) -> set[tuple[int, int, int]]:
    """(phase index, worker, episode) of the instance's episodes that ended (their
    ``episodes`` row is in): what :func:`episodes_done` counts, in phases that have such
    rows."""
    found = connection.execute(
        select(_Phase.c.index, t.episodes.c.worker, t.episodes.c.episode)
        .join(_Phase, t.episodes.c.experiment_run_phase_id == _Phase.c.id)
        .where(_Phase.c.experiment_run_instance_id == instance_id)
    )
    return {(index, worker, episode) for index, worker, episode in found}


def _partly_recorded(connection: Connection, instance_id: int) -> list[int]:
    """The ids of the instance's phases that did not record every step."""
    found = connection.execute(
        select(_Phase.c.id, _Phase.c.config).where(
            _Phase.c.experiment_run_instance_id == instance_id
        )
    )
    return [row.id for row in found if (row.config or {}).get("record_every", 1) != 1]


def _summed_rewards(instance_id: int, partial: list[int], filters: _Filters) -> Select[Any]:
    """:func:`episode_rewards`' rows of the phases but ``partial``, summed from their
    ``muscle_actions``."""
    episode = _of(t.muscle_actions, "worker episode")
    chosen = (
        select(
            *_PHASE_MODE,
            _AGENT,
            *episode,
            func.count(t.muscle_actions.c.id).label("steps"),
            func.sum(t.muscle_actions.c.reward).label("reward"),
            func.sum(t.muscle_actions.c.objective).label("objective"),
            func.count(t.muscle_actions.c.reward).label("rewarded"),
            func.count(t.muscle_actions.c.objective).label("objectived"),
            t.agents.c.id.label("agent_order"),
        )
        .select_from(t.muscle_actions)
        .join(t.agents, t.muscle_actions.c.agent_id == t.agents.c.id)
        .join(_Phase, t.agents.c.experiment_run_phase_id == _Phase.c.id)
        .where(_Phase.c.experiment_run_instance_id == instance_id, _Phase.c.id.not_in(partial))
        .group_by(
            _Phase.c.index, _Phase.c.name, _Phase.c.mode, t.agents.c.id, t.agents.c.name, *episode
        )
        .order_by(_Phase.c.index, t.agents.c.id, *episode)
    )
    return _filtered(chosen, filters)


def _nan_sums(summed: Rows) -> list[Row]:
    """:func:`_summed_rewards`' rows with a sum that is NaN (steps of inf and -inf) as NaN:
    SQLite makes it NULL, as if no step had a value; PostgreSQL keeps NaN."""
    for row in summed:
        for column, counted in (("reward", "rewarded"), ("objective", "objectived")):
            if row[column] is None and row[counted]:
                row[column] = math.nan
    return list(summed)


def _nan_episodes(connection: Connection, instance_id: int, summed: list[Row]) -> None:
    """Make NaN the reward of each of ``summed`` whose episode's reward was NaN as the run
    summed it (its ``episodes`` row): a step whose reward was NaN is NULL in
    ``muscle_actions``, which the database's sum leaves out."""
    found = connection.execute(
        select(_Phase.c.index, t.episodes.c.worker, t.episodes.c.episode, t.episodes.c.rewards)
        .join(_Phase, t.episodes.c.experiment_run_phase_id == _Phase.c.id)
        .where(_Phase.c.experiment_run_instance_id == instance_id)
        .where(cast(t.episodes.c.rewards, Text).like('%"nan"%'))  # (few episodes have one)
    )
    nan = {
        (index, worker, episode, agent)
        for index, worker, episode, rewards in found
        for agent, reward in (rewards or {}).items()
        if isinstance(reward, float) and math.isnan(reward)
    }
    for row in summed if nan else ():
        if (row["phase"], row["worker"], row["episode"], row["agent"]) in nan:
            row["reward"] = math.nan


def _unrecorded_episodes(connection: Connection, instance_id: int, summed: list[Row]) -> None:
    """Give each of ``summed`` whose episode had steps while recording was paused (a
    ``recording_gaps`` row: their ``muscle_actions`` rows are not written) the reward and
    steps of its ``episodes`` row, and no objective, as a phase that records fewer steps: the
    sum of its rows would be part of it. An episode a gap ends in counts as one."""
    gaps = _gaps(connection, instance_id)
    paused = [
        row
        for row in summed
        if any(
            start <= row["episode"] and (end is None or row["episode"] <= end)
            for start, end in gaps.get((row["phase"], row["worker"]), ())
        )
    ]
    if not paused:
        return
    ended = {
        (index, worker, episode): (steps, rewards or {})
        for index, worker, episode, steps, rewards in connection.execute(
            select(_Phase.c.index)
            .add_columns(*t.episodes.c["worker", "episode", "steps", "rewards"])
            .join(_Phase, t.episodes.c.experiment_run_phase_id == _Phase.c.id)
            .where(_Phase.c.experiment_run_instance_id == instance_id)
            .where(_Phase.c.index.in_({row["phase"] for row in paused}))
        )
    }
    for row in paused:
        found = ended.get((row["phase"], row["worker"], row["episode"]))
        if found is not None:  # (else cut short: see episode_rewards)
            steps, rewards = found
            row.update(steps=steps, reward=rewards.get(row["agent"]), objective=None)


def _gaps(connection: Connection, instance_id: int) -> dict[tuple[int, int], list[Any]]:
    """The instance's recording gaps by phase index and worker: their first and last
    episodes (None: still paused at the phase's end)."""
    gaps: dict[tuple[int, int], list[Any]] = {}
    for index, worker, start, end in connection.execute(
        select(_Phase.c.index)
        .add_columns(*t.recording_gaps.c["worker", "from_episode", "to_episode"])
        .join(_Phase, t.recording_gaps.c.experiment_run_phase_id == _Phase.c.id)
        .where(_Phase.c.experiment_run_instance_id == instance_id)
    ):
        gaps.setdefault((index, worker), []).append((start, end))
    return gaps


def _episode_reward_rows(
    connection: Connection, instance_id: int, phase_ids: list[int], filters: _Filters
) -> list[Row]:
    """:func:`episode_rewards`' rows of the phases ``phase_ids``, from their ``episodes``."""
    chosen = (
        select(
            *_PHASE_MODE,
            _AGENT,
            t.agents.c.id.label("agent_order"),
            *t.episodes.c["worker", "episode", "steps", "rewards"],
        )
        .select_from(t.episodes)
        .join(_Phase, t.episodes.c.experiment_run_phase_id == _Phase.c.id)
        .join(t.agents, t.agents.c.experiment_run_phase_id == _Phase.c.id)
        .where(_Phase.c.experiment_run_instance_id == instance_id, _Phase.c.id.in_(phase_ids))
    )
    if not phase_ids:
        return []
    found = _rows(connection.execute(_filtered(chosen, filters)))
    for row in found:
        row["reward"] = (row["rewards"] or {}).get(row["agent"])
        row["objective"] = None
    return found


def brain_states(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    with_dump: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The brain dumps of a run instance, per phase and agent oldest first.

    Args:
        with_dump: Also return the dumps themselves (bytes; they can be large).

    Returns:
        ``id`` (what an agent's ``loaded_from`` names), ``phase``, ``phase_name``, ``agent``,
        ``tag``, ``path``, ``created_at`` and, with ``with_dump``, ``dump``.
    """

    extra = (t.brain_states.c.dump,) if with_dump else ()
    return BRAIN_STATES.read(run, store_uri, instance, extra, phase=phase, agent=agent)


def statistics(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    source: Match | None = None,
    episode: Match | None = None,
    mode: Match | None = None,
    worker: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """What the Brains and Muscles of a run instance recorded with ``add_statistics``
    (palaestrAI's API): one row per source, worker, episode and step that had any.

    A Brain's row is at the worker, episode and step of the Muscle whose experience it thought
    about (-1 for those added while it stored its state as the phase stopped).

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        agent: Agent name(s).
        source: ``"brain"`` or ``"muscle"``.
        episode: Episode number(s).
        mode: Phase mode(s).
        worker: Worker number(s) (for a Brain's row: of the Muscle it answered).
        expand: Replace ``statistics`` by one column per key (``statistic.<key>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``source`` (``brain`` or ``muscle``),
        ``worker``, ``episode``, ``step`` and ``statistics`` (the values by key).
    """
    found = STATISTICS.read(
        run,
        store_uri,
        instance,
        phase=phase,
        mode=mode,
        agent=agent,
        source=source,
        worker=worker,
        episode=episode,
    )
    return expanded(found) if expand else found


def evaluations(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    worker: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The agents' results of a run instance's evaluations (``phase_config.evaluate_every``):
    one row per agent and evaluation, what its Brain's ``evaluate_rollouts`` returned.

    The view of a resumed run keeps an interrupted instance's results of the rollouts it
    completed before the resume's start, as its episodes (the resumed instance played the
    others again).

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        agent: Agent name(s).
        worker: Worker number(s) (of the rollout judged).
        expand: Replace ``metrics`` by one column per metric (``metric.<name>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``evaluation`` (0, 1, ... in the
        phase), ``training_episodes`` (each game's before it), ``worker`` and ``episode`` (the
        rollout judged, numbered as ``episodes`` numbers it), ``metrics`` (by name: numbers,
        infinities and NaN as floats, None where the Brain gave no number; None where
        ``evaluate_rollouts`` returned no result), ``checkpoint_id``, ``checkpoint_hash``
        and ``at`` (when the result came).
    """
    found = EVALUATIONS.read(run, store_uri, instance, phase=phase, agent=agent, worker=worker)
    return expanded(found) if expand else found


def plugin_records(
    run: str,
    *,
    phase: Match | None = None,
    source: Match | None = None,
    key: Match | None = None,
    worker: Match | None = None,
    episode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """What plug-ins of a run instance recorded with ``context.record(key, value)``.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``source`` (``brain:<agent>``, ``muscle:<agent>``
        or ``env:<uid>``), ``worker``, ``episode``, ``step``, ``key`` and ``value``, in the
        order they were recorded per source.
    """
    return PLUGIN_RECORDS.read(
        run,
        store_uri,
        instance,
        phase=phase,
        source=source,
        key=key,
        worker=worker,
        episode=episode,
    )


def recording_gaps(
    run: str, *, store_uri: StoreURI | None = None, instance: str | None = None
) -> Rows:
    """Where a run instance's recording was paused: ``phase``, ``phase_name``, ``mode``,
    ``worker``, ``from_episode``, ``from_step`` (the first step not recorded), ``to_episode``,
    ``to_step`` (the first recorded again; None if it stayed paused)."""
    return RECORDING_GAPS.read(run, store_uri, instance)


def code_reloads(
    run: str,
    *,
    phase: Match | None = None,
    source: Match | None = None,
    worker: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """The hot reloads of a run instance's plug-ins (``experiment-start --reload``).

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``source`` (``muscle:<agent>``,
        ``objective:<agent>`` or ``brain:<agent>``), ``worker``, ``episode``, ``step`` (the
        first step the new code ran; for a failed reload the step at which it was tried; -1
        where there was none), ``module``, ``path``, ``ok``, ``error`` (the traceback that
        kept the old code running) and ``at``, in the order they happened per phase.
    """
    return CODE_RELOADS.read(run, store_uri, instance, phase=phase, source=source, worker=worker)


def step_lateness(
    run: str, *, store_uri: StoreURI | None = None, instance: str | None = None
) -> Rows:
    """How late the steps of a run instance's paced phases (``phase_config.step_rate``) began.

    Returns:
        Per paced phase with recorded steps: ``phase``, ``phase_name``, ``mode``, ``steps``
        (with a lateness), ``late`` (how many began more than :data:`LATE_SECONDS` after
        their due time), ``p50``, ``p99`` and ``max`` of the lateness in seconds. Lockstep
        phases have no row. The steps are read as they come, not as a dict per step.
    """

    statement = LATENESS.statement

    groups: dict[tuple[Any, ...], array[float]] = {}
    with _connection(store_uri) as connection:
        chain = _instances(connection, run, instance)
        instance_id = chain[-1]
        if len(chain) == 1:  # as the rows come, no dict per row
            found: Iterable[Any] = connection.execute(statement(instance_id))
        else:  # a resumed run: the rows of its view (see _chain_rows)
            found = (tuple(row.values()) for row in _chain_rows(connection, chain, statement))
        for phase, name, mode, _, _, late in found:
            groups.setdefault((phase, name, mode), array("d")).append(late)
    columns = ("phase", "phase_name", "mode", "steps", "late", "p50", "p99", "max")
    rows = []
    for key, values in groups.items():
        ordered = sorted(values)
        slow = len(ordered) - bisect.bisect_right(ordered, LATE_SECONDS)
        summary = (len(ordered), slow, _quantile(ordered, 0.5), _quantile(ordered, 0.99))
        rows.append(dict(zip(columns, (*key, *summary, ordered[-1]), strict=True)))
    return Rows(rows, columns)


LATE_SECONDS = 1e-3
"""A paced step that began more than this after its due time counts as late in
:func:`step_lateness`."""


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values (the nearest rank: a value that occurred)."""
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n * q), at least the first
    return ordered[int(rank) - 1]


# --- presentation ----------------------------------------------------------------------------


def expanded(rows: Rows) -> Rows:
    """Split the JSON columns of sensor and set-point values into one column per uid.

    ``sensor_readings`` and ``sensors`` become ``sensor.<uid>`` columns, ``actuator_setpoints``
    and ``setpoints`` become ``setpoint.<uid>`` columns (and a statistics row's ``statistics``
    ``statistic.<key>`` columns), in place of the JSON column and in the order the uids first
    appear; a uid missing from a row is None there.
    """
    columns: list[str] = []
    split: dict[str, list[tuple[str, str]]] = {}
    for name in rows.columns:
        if name not in EXPAND_PREFIXES:
            columns.append(name)
            continue
        uids = dict.fromkeys(uid for row in rows for uid in row[name] or {})
        split[name] = [(EXPAND_PREFIXES[name] + uid, uid) for uid in uids]
        columns.extend(column for column, _ in split[name])
    return Rows((_expanded_row(row, split) for row in rows), columns)


def _expanded_row(row: Row, split: dict[str, list[tuple[str, str]]]) -> Row:
    out: Row = {}
    for name, value in row.items():
        if name in split:
            values = value or {}
            out.update((column, values.get(uid)) for column, uid in split[name])
        else:
            out[name] = value
    return out


def reward_summary(episodes: Rows) -> Rows:
    """Per phase and agent: the number of episodes and the mean, min and max of their rewards;
    of its training episodes and of its evaluation rollouts apart.

    Args:
        episodes: What :func:`episode_rewards` returned.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``evaluation``, ``episodes``, ``mean``,
        ``min`` and ``max`` (None where no episode has a reward; NaN where one is NaN).
    """
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for row in episodes:
        rollouts = bool(row.get("evaluation"))  # (rows of an older reader: none)
        key = (row["phase"], row["phase_name"], row["mode"], row["agent"], rollouts)
        groups.setdefault(key, []).append(row["reward"])
    columns = (
        *("phase", "phase_name", "mode", "agent", "evaluation"),
        *("episodes", "mean", "min", "max"),
    )
    return Rows(
        (
            dict(zip(columns, (*key, *_stats(rewards)), strict=True))
            for key, rewards in groups.items()
        ),
        columns,
    )


def _stats(rewards: list[float | None]) -> tuple[int, float | None, float | None, float | None]:
    known = [reward for reward in rewards if reward is not None]
    if not known:
        return len(rewards), None, None, None
    mean = sum(known) / len(known)
    if any(math.isnan(reward) for reward in known):  # (min and max would depend on the order)
        return len(rewards), mean, math.nan, math.nan
    return len(rewards), mean, min(known), max(known)


# --- deleting runs ---------------------------------------------------------------------------


def run_contents(run: str, *, store_uri: StoreURI | None = None) -> Row:
    """What deleting the run would delete: its rows per table, over all its instances.

    Returns:
        ``run``, ``experiment`` (its uid), ``runs_of_experiment`` (how many runs the experiment
        has, this one included), ``running`` (instances still marked running), ``still_running``
        (why the run cannot be deleted without ``force``: an instance of it is running; else
        None), ``instances`` (the uids of its instances), ``dump_paths`` (the files its brain
        dumps were written to, as recorded) and the number of rows of each table
        (``experiment_run_instances``, ..., ``brain_states``).

    Raises:
        UnknownRunError: The store has no such run.
    """
    with _connection(store_uri) as connection:
        run_id, experiment_id = _run_ids(connection, run)
        still_running = _still_running(connection, run, run_id)
        parts = _run_parts(run_id)
        counts = {
            table: connection.scalar(select(func.count()).select_from(model).where(condition))
            for table, model, condition in parts
        }
        of_run = {table: condition for table, _, condition in parts}["brain_states"]
        dump_paths = connection.scalars(select(t.brain_states.c.path).where(of_run).distinct())
        instances = connection.execute(
            select(_Instance.c.uid, _Instance.c.status)
            .where(_Instance.c.experiment_run_id == run_id)
            .order_by(_Instance.c.id)
        ).all()
        return {
            "run": run,
            "experiment": connection.scalar(
                select(t.experiments.c.uid).where(t.experiments.c.id == experiment_id)
            ),
            "runs_of_experiment": connection.scalar(
                select(func.count(t.experiment_runs.c.id)).where(
                    t.experiment_runs.c.experiment_id == experiment_id
                )
            ),
            "running": sum(row.status == "running" for row in instances),
            "still_running": still_running,
            "instances": [row.uid for row in instances],
            "dump_paths": sorted(path for path in dump_paths if path),
            **counts,
        }


def delete_run(
    run: str, *, store_uri: StoreURI | None = None, force: bool = False
) -> dict[str, int]:
    """Delete a run with everything of it, in one transaction; its experiment too if empty.

    A run an instance of which is still ``running`` is refused (deleting it would fail that
    run) unless ``force`` is given, for a run left ``running`` by a crash. The check is made in
    the deleting transaction, which holds the run from before it (:func:`_hold_run`): an
    instance that starts meanwhile, an ``experiment-resume`` of one of the run's instances
    above all, takes turns with it. One whose start was recorded first is seen by the check (a
    resume's claim of its instance, still uncommitted, is waited for); one that comes while the
    run is held waits for the deletion, and a resume is then refused, its instance gone
    (:func:`palaestra.store.continued.claim`).

    Returns:
        The number of rows deleted per table.

    Raises:
        UnknownRunError: The store has no such run.
        RunStillRunningError: An instance of the run is running and ``force`` is False.
    """
    with transaction(store_uri, write=True) as connection:
        run_id, experiment_id = _hold_run(connection, run)
        still_running = None if force else _still_running(connection, run, run_id)
        if still_running:
            raise RunStillRunningError(still_running)
        deleted = {
            table: _deleted(connection.execute(delete(model).where(condition)))
            for table, model, condition in _run_parts(run_id)
        }
        deleted["experiment_runs"] = _deleted(
            connection.execute(delete(t.experiment_runs).where(t.experiment_runs.c.id == run_id))
        )
        others = select(t.experiment_runs.c.id).where(
            t.experiment_runs.c.experiment_id == experiment_id
        )
        deleted["experiments"] = _deleted(
            connection.execute(
                delete(t.experiments).where(t.experiments.c.id == experiment_id, ~others.exists())
            )
        )
        return deleted


def _hold_run(connection: Connection, run: str) -> tuple[int, int]:
    """The ids of ``run`` and of its experiment (as :func:`_run_ids`), held by this transaction
    until it ends: no other writer commits between a check of the run and its deletion.

    On SQLite the transaction (``write``: :func:`transaction`) holds the store's write lock
    from its start (``BEGIN IMMEDIATE``). On PostgreSQL it locks the rows
    of the run's instances, then the run's and its experiment's (``FOR UPDATE``), in the order
    a resume's claim takes them (its instance, then the run by the new instance's key): a claim
    or a start of an instance waits for this transaction, or this one for the claim's, and its
    check (a statement of its own, at READ COMMITTED) then sees the claim's instance.
    """
    run_id, experiment_id = _run_ids(connection, run)
    if connection.dialect.name == "postgresql":
        instances = _Instance.c.experiment_run_id == run_id
        connection.execute(
            select(_Instance.c.id).where(instances).order_by(_Instance.c.id).with_for_update()
        )
        runs, experiments = t.experiment_runs.c, t.experiments.c
        connection.execute(select(runs.id).where(runs.id == run_id).with_for_update())
        connection.execute(
            select(experiments.id).where(experiments.id == experiment_id).with_for_update()
        )
    return run_id, experiment_id


def _run_parts(run_id: int) -> list[tuple[str, Any, ColumnElement[bool]]]:
    """Table name, table and the rows of the run, in an order that deletes children first."""
    instances = select(_Instance.c.id).where(_Instance.c.experiment_run_id == run_id)
    phase_ids = select(_Phase.c.id).where(_Phase.c.experiment_run_instance_id.in_(instances))
    agent_ids = select(t.agents.c.id).where(t.agents.c.experiment_run_phase_id.in_(phase_ids))
    environment_ids = select(t.environments.c.id).where(
        t.environments.c.experiment_run_phase_id.in_(phase_ids)
    )

    def of(table: Any, key: str, ids: Any) -> tuple[str, Any, ColumnElement[bool]]:
        return table.name, table, table.c[key].in_(ids)

    return [
        of(t.brain_states, "agent_id", agent_ids),
        of(t.statistics, "agent_id", agent_ids),
        of(t.evaluations, "agent_id", agent_ids),
        of(t.muscle_actions, "agent_id", agent_ids),
        of(t.episodes, "experiment_run_phase_id", phase_ids),
        of(t.plugin_records, "experiment_run_phase_id", phase_ids),
        of(t.recording_gaps, "experiment_run_phase_id", phase_ids),
        of(t.code_reloads, "experiment_run_phase_id", phase_ids),
        of(t.world_states, "environment_id", environment_ids),
        of(t.agents, "experiment_run_phase_id", phase_ids),
        of(t.environments, "experiment_run_phase_id", phase_ids),
        of(_Phase, "experiment_run_instance_id", instances),
        ("experiment_run_instances", _Instance, _Instance.c.experiment_run_id == run_id),
    ]


def _deleted(result: CursorResult[Any]) -> int:
    return max(result.rowcount, 0)


def _still_running(connection: Connection, run: str, run_id: int) -> str | None:
    """Why ``run`` must not be deleted (an instance of it is running, where and since when:
    also an older one, the run file started twice), or None."""
    continued = _Instance.alias("continued")
    newest = connection.execute(
        select(_Instance.c.uid, _Instance.c.host, _Instance.c.started_at, continued.c.uid)
        .outerjoin(continued, _Instance.c.resumed_from_id == continued.c.id)
        .where(_Instance.c.experiment_run_id == run_id, _Instance.c.status == "running")
        .order_by(_Instance.c.id.desc())
        .limit(1)
    ).first()
    if newest is None:
        return None
    uid, host, started_at, resumed = newest
    started = started_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    resuming = f", an experiment-resume of instance {resumed}" if resumed is not None else ""
    return (
        f"run '{run}' is still running (instance {uid}{resuming}, on host {host}, "
        f"started {started} UTC); deleting it would fail it. Wait for it to end or stop it; "
        "if it was left running by a crash (its palaestra process is gone), delete it with "
        "`palaestra clean --force`"
    )


def _run_ids(connection: Connection, run: str) -> tuple[int, int]:
    found = connection.execute(
        select(t.experiment_runs.c.id, t.experiment_runs.c.experiment_id).where(
            t.experiment_runs.c.uid == run
        )
    ).first()
    if found is None:
        raise UnknownRunError(_unknown_run(connection, run))
    return found.id, found.experiment_id


# --- helpers ---------------------------------------------------------------------------------


_Filters = Iterable[tuple[Any, Match | None]]
"""Filters of a statement: (column, or ``_Phase`` for a phase's index or name; value)."""


def _filtered(statement: Select[Any], filters: _Filters) -> Select[Any]:
    """``statement`` with a WHERE condition per filter given (``_Phase``: index or name)."""
    for column, value in filters:
        if value is not None:
            condition = _phase_match(value) if column is _Phase else _match(column, value)
            statement = statement.where(condition)
    return statement


def _match(column: Any, value: Match) -> ColumnElement[bool]:
    values = _as_column(column, _values(value))
    condition: ColumnElement[bool] = (
        column == values[0] if len(values) == 1 else column.in_(values)
    )
    return condition


_INTEGER_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


def _as_column(column: Any, values: list[int | str]) -> list[int | str]:
    """``values`` of the type of ``column``, compared alike on every store: PostgreSQL refuses
    to compare a number column with a text (``operator does not exist: integer = character
    varying``) and a text column with a number, which SQLite converts. A text for a number
    column is its integer (``worker="1"``: worker 1), or matches no row where it is none (or
    is beyond 64 bits); a number for a text column is its text (``agent=7``: agent ``"7"``)."""
    if isinstance(column.type, Integer):
        numbers: list[int | str] = []
        for value in values:
            if isinstance(value, str):
                if not _INTEGER_TEXT.fullmatch(value) or int(value) not in INTEGER_RANGE:
                    continue
                value = int(value)
            numbers.append(value)
        return numbers
    if isinstance(column.type, String):
        return [str(value) for value in values]
    return values


def _phase_match(value: Match) -> ColumnElement[bool]:
    """Phases by index (int) or name (str), or by several of either (none: no phase, as
    :func:`_match` matches no row with none)."""
    values = _values(value)
    indexes = [v for v in values if isinstance(v, int)]
    names = [v for v in values if isinstance(v, str)]
    conditions = [_match(_Phase.c.index, indexes)] if indexes else []
    conditions += [_match(_Phase.c.name, names)] if names else []
    return conditions[0] if len(conditions) == 1 else or_(false(), *conditions)


INTEGER_RANGE = range(-(2**63), 2**63)
"""The integers a store's column holds (64 bits); a filter's integer outside matches no row."""


def _values(value: Match) -> list[int | str]:
    """A filter's values as plain ints and strs (numpy integers and arrays are welcome); a
    :class:`TypeError` for any other value. An integer no column holds (beyond 64 bits) is
    left out: it matches no row, where the database would refuse it."""
    items = value if isinstance(value, Iterable) and not isinstance(value, str) else [value]
    values: list[int | str] = []
    for item in items:
        if isinstance(item, str):
            values.append(str(item))
        elif isinstance(item, Integral) and not isinstance(item, bool):
            if int(item) in INTEGER_RANGE:
                values.append(int(item))
        else:
            raise TypeError(f"a filter takes integers or strings, got {item!r}")
    return values


def _with_durations(rows: Rows) -> Rows:
    """``rows`` with ``duration_s`` (seconds from start to finish, or None) after finished_at."""
    at = rows.columns.index("finished_at") + 1
    columns = (*rows.columns[:at], "duration_s", *rows.columns[at:])
    return Rows(
        (
            {name: row.get(name) for name in columns} | {"duration_s": _duration(row)}
            for row in rows
        ),
        columns,
    )


def _duration(row: Row) -> float | None:
    started: dt.datetime | None = row["started_at"]
    finished: dt.datetime | None = row["finished_at"]
    if started is None or finished is None:
        return None
    return (finished - started).total_seconds()


def _fetch_run(
    store_uri: StoreURI | None,
    run: str,
    instance: str | None,
    statement: Callable[[int], Select[Any]],
) -> Rows:
    """The rows of ``statement(instance_id)`` for the run's named instance, or for its newest
    and the instances it resumed (see :func:`_chain_rows`)."""
    with _connection(store_uri) as connection:
        chain = _instances(connection, run, instance)
        instance_id = chain[-1]
        if len(chain) == 1:
            return _rows(connection.execute(statement(instance_id)))
        return _chain_rows(connection, chain, statement)


STREAMED = {"world_states": WORLD_STATES, "muscle_actions": MUSCLE_ACTIONS}
"""The per-step tables, which :func:`each_row` reads as they come (a long run has millions of
their rows)."""


@contextmanager
def each_row(
    table: str,
    run: str,
    *,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
    **match: Match | None,
) -> Iterator[tuple[tuple[str, ...], Iterator[Sequence[Any]]]]:
    """The columns and the rows (values in their order) of per-step ``table`` of the run, as
    :func:`world_states` and :func:`muscle_actions` give them (``match``: their filters), read
    from the store while they are taken: memory stays flat however many there are. The view
    of a resumed run (its instances' rows merged, see :func:`_chain_rows`) is read whole.

    Raises:
        UnknownRunError: No such run, or the run has no such instance.
        StoreError: The store cannot be read.
    """
    listing = STREAMED[table]
    with _connection(store_uri) as connection:
        chain = _instances(connection, run, instance)
        instance_id = chain[-1]
        if len(chain) > 1:
            found = _chain_rows(connection, chain, lambda at: listing.statement(at, (), **match))
            yield found.columns, ([row[c] for c in found.columns] for row in found)
            return
        result = connection.execution_options(yield_per=STREAM_ROWS).execute(
            listing.statement(instance_id, (), **match)
        )
        yield tuple(result.keys()), iter(result)


STREAM_ROWS = 2000
"""Rows :func:`each_row` fetches at a time (PostgreSQL: through a server-side cursor)."""


class Continued(str):
    """An instance uid whose rows are read as the run's view reads its newest instance's:
    with the rows of the instances it continues (``experiment-resume``), before its start
    (what a resumed instance's replay of its own run reads: not another instance's of the
    same run running at the same time)."""


def _instances(connection: Connection, run: str, instance: str | None) -> list[int]:
    """The ids of the run's instances a reading takes, oldest first: the one named; or the
    newest (or a :class:`Continued` one) and the instances it continues, read as its view
    (:class:`UnknownRunError`: no such run or instance)."""
    instance_id = _instance_id(connection, run, instance)
    if instance is None or isinstance(instance, Continued):
        return resumed_chain(connection, instance_id)
    return [instance_id]


def resumed_chain(connection: Connection, instance_id: int) -> list[int]:
    """``instance_id`` and the instances it resumed (``resumed_from_id``), oldest first. A
    recorded replay (``experiment-replay --record``: ``source_instance_id``) stands in for the
    instance it replayed, continuing what that one continues: the copy of a resumed instance
    holds that instance's episodes only."""
    chain = [instance_id]
    while True:
        earlier = _continued(connection, chain[0])
        if earlier is None or earlier in chain:
            return chain
        chain.insert(0, earlier)


def _continued(connection: Connection, instance_id: int) -> int | None:
    """The instance that ``instance_id`` continues: its ``resumed_from_id``; for a recorded
    replay, the one its source continues (a replay's source may be a replay)."""
    seen = {instance_id}
    while True:
        row = connection.execute(
            select(_Instance.c.resumed_from_id, _Instance.c.source_instance_id).where(
                _Instance.c.id == instance_id
            )
        ).one_or_none()
        if row is None:
            return None
        if row.resumed_from_id is not None:
            return int(row.resumed_from_id)
        if row.source_instance_id is None or row.source_instance_id in seen:
            return None
        instance_id = int(row.source_instance_id)
        seen.add(instance_id)


def _chain_rows(
    connection: Connection, chain: list[int], statement: Callable[[int], Select[Any]]
) -> Rows:
    """The run's view of a resumed instance: of each instance it resumed, the rows of the
    episodes it completed before the next instance's start (phase, first episode; rows with
    no episode: of the phases before that start), then every row of the newest instance;
    ordered as one instance's rows are (phase, environment or agent, worker, episode)."""
    found: list[Row] = []
    columns: Sequence[str] = ()
    for at, instance_id in enumerate(chain):
        rows = _rows(connection.execute(statement(instance_id)))
        columns = rows.columns
        if at < len(chain) - 1:
            start = _resume_start(connection, chain[at + 1])
            done = completed_episodes(connection, instance_id)
            rows = Rows((r for r in rows if _kept(r, start, done)), columns)
        found.extend(rows)
    entity = next((c for c in ("environment", "agent") if c in columns), None)
    order: dict[Any, int] = {}
    for row in found:
        order.setdefault(row.get(entity) if entity else None, len(order))

    def key(row: Row) -> tuple[int, int, int, int]:
        place = order[row.get(entity) if entity else None]
        return (row.get("phase", 0), place, row.get("worker") or 0, row.get("episode") or 0)

    return Rows(sorted(found, key=key), columns)


def viewed_evaluations(connection: Connection, instance_id: int, phase: int) -> Rows:
    """The ``evaluations`` rows (as :func:`evaluations` gives them) of phase ``phase`` in
    the run's view of instance ``instance_id``: with those of the instances it continues that
    the view keeps (see :func:`_chain_rows`: of the rollouts each completed before the next
    one's start)."""
    chain = resumed_chain(connection, instance_id)
    return _chain_rows(connection, chain, lambda at: EVALUATIONS.statement(at, (), phase=phase))


def _resume_start(connection: Connection, instance_id: int) -> tuple[float, int]:
    """Where a resumed instance started: its first phase's index and first episode."""
    first = connection.execute(
        select(_Phase.c.index.label("number"), _Phase.c.config)
        .where(_Phase.c.experiment_run_instance_id == instance_id)
        .order_by(_Phase.c.index)
        .limit(1)
    ).one_or_none()
    if first is None:  # it recorded no phase: it replaces nothing
        return float("inf"), 0
    return first.number, first_stored(first.config)


def _kept(row: Row, start: tuple[float, int], done: set[tuple[int, int, int]]) -> bool:
    """Whether a resumed instance's ``row`` is in the run's view (see :func:`_chain_rows`)."""
    phase = row.get("phase", 0)
    if "episode" not in row or row["episode"] is None:
        return bool(phase < start[0])
    if (phase, row.get("worker", 0), row["episode"]) not in done:
        return False
    return bool(phase < start[0] or (phase == start[0] and row["episode"] < start[1]))


def _rows(result: CursorResult[Any]) -> Rows:
    columns = list(result.keys())
    return Rows((dict(zip(columns, row, strict=True)) for row in result), columns)


def _instance_id(connection: Connection, run: str, instance: str | None) -> int:
    """The id of the run's newest instance, or of the one named (:class:`UnknownRunError`: no
    such run or instance)."""
    found = connection.execute(
        select(_Instance.c.id, _Instance.c.uid)
        .join(t.experiment_runs, _Instance.c.experiment_run_id == t.experiment_runs.c.id)
        .where(t.experiment_runs.c.uid == run)
        .order_by(_Instance.c.id)
    ).all()
    if not found:
        raise UnknownRunError(_unknown_run(connection, run))
    if instance is None:
        return int(found[-1].id)
    for row in found:
        if row.uid == instance:
            return int(row.id)
    known = ", ".join(row.uid for row in found)
    raise UnknownRunError(f"run '{run}' has no instance '{instance}'; its instances: {known}")


def _unknown_run(connection: Connection, run: str) -> str:
    """A message naming the run asked for and a few the store has (newest first)."""
    store = connection.engine.url.render_as_string(hide_password=True)
    known = list(
        connection.scalars(select(t.experiment_runs.c.uid).order_by(t.experiment_runs.c.id.desc()))
    )
    if not known:
        return f"no run '{run}' in the store {store}: it has no runs"
    shown = ", ".join(known[:KNOWN_RUNS_SHOWN])
    if len(known) > KNOWN_RUNS_SHOWN:
        shown += f" and {len(known) - KNOWN_RUNS_SHOWN} more"
    hint = did_you_mean(run, known)
    return f"no run '{run}' in the store {store}; it has: {shown}" + (f". {hint}" if hint else "")


@contextmanager
def _connection(store_uri: StoreURI | None) -> Iterator[Connection]:
    """A connection to the store; database errors become :class:`StoreError`."""
    with _engine(resolve_store_uri(store_uri), read_only=True) as engine:
        try:
            with engine.connect() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise _store_error(engine, "cannot read", exc) from exc


@contextmanager
def transaction(store_uri: StoreURI | None, *, write: bool = False) -> Iterator[Connection]:
    """A connection in one transaction, committed at the end unless an error is raised.

    Its reads see one snapshot of the store, that of its first read: what another connection
    commits meanwhile is not seen. On SQLite the transaction is begun before its first
    statement (the driver, pysqlite, begins none before a SELECT: each read saw the store as
    it was then); in WAL mode the first read takes the snapshot. On PostgreSQL a reading
    transaction is REPEATABLE READ (its default, READ COMMITTED, takes a snapshot per
    statement).

    With ``write``, for a transaction that writes what it read: on SQLite it holds the
    store's write lock from its start (``BEGIN IMMEDIATE``; the writers of a store take turns,
    and no commit comes between its reads and its writes; a deferred transaction that read
    could not write after another's commit, SQLITE_BUSY_SNAPSHOT). On PostgreSQL it is READ
    COMMITTED, its statements each seeing what was committed before them, with the row locks
    it takes (:func:`_hold_run`).
    """
    with _engine(resolve_store_uri(store_uri)) as engine:
        try:
            with engine.connect() as connection:
                dialect = connection.dialect.name
                if dialect == "postgresql" and not write:
                    connection.execution_options(isolation_level="REPEATABLE READ")
                with connection.begin():
                    if dialect == "sqlite":
                        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
                    yield connection
        except SQLAlchemyError as exc:
            raise _store_error(engine, "cannot write" if write else "cannot read", exc) from exc


def _store_error(engine: Engine, what: str, exc: SQLAlchemyError) -> StoreError:
    uri = engine.url.render_as_string(hide_password=True)
    return StoreError(f"store {uri}: {what}: {reason(exc)}")


@contextmanager
def _engine(store: StoreURI, read_only: bool = False) -> Iterator[Engine]:
    """The engine of ``store``; one made here from a URI (opened read-only for reading) is
    disposed afterwards."""
    if isinstance(store, Engine):
        yield store
        return
    _require_existing_sqlite(store)
    engine = make_engine(store, read_only=read_only)
    try:
        require_readable(engine)
        yield engine
    finally:
        engine.dispose()


def _require_existing_sqlite(uri: str) -> None:
    """Reading must not create an empty SQLite store where there was none."""
    try:
        url = make_url(uri)
    except NOT_A_URL:
        return  # make_engine reports it
    path = sqlite_file(url)
    if path is not None and not path.exists():
        where = "" if path.is_absolute() else f" (relative to the working directory {Path.cwd()})"
        raise StoreError(
            f"store {mask_uri(uri)}: no such store file: {url.database}{where}. Run palaestra in "
            "the directory of the store, or point at it: PALAESTRA_STORE_URI=sqlite:////abs/"
            "path/palaestra.db, or store_uri in a runtime config file given with -c FILE"
        )
