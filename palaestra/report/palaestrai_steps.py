"""One phase of a palaestra run instance as palaestrAI's rows: its environments (one row per
worker), agents, world states, muscle actions and brain dumps.

What maps to what is said in :mod:`palaestra.report.palaestrai_export`. The per-step rows are
read in chunks of :data:`CHUNK` (server-side cursors on PostgreSQL) in the order palaestra
stored them, shaped here, and inserted a chunk at a time (:func:`palaestra.store.bulk.
insert_values`: ``COPY`` on psycopg 3, one ``executemany`` elsewhere). A muscle action's
simulation times and statistics come from correlated subqueries on palaestra's indexes, and
only for the environments that reported a simulation time and the sources that recorded
statistics in the phase. The end time of every episode of the phase is held in memory (the
steps' ``walltime``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
from sqlalchemy import Connection, Label, Row, Select, Table, Text, cast, insert, null, select

from palaestra.core.description import names
from palaestra.core.nonfinite import NON_FINITE
from palaestra.core.wire.records import reward_items
from palaestra.report import palaestrai_schema as P
from palaestra.store import tables as t
from palaestra.store.bulk import insert_values
from palaestra.store.completed import is_rollout

if TYPE_CHECKING:
    AnyRow: TypeAlias = Row[*tuple[Any, ...]]
    AnySelect: TypeAlias = Select[*tuple[Any, ...]]

CHUNK = 2_000
"""Rows read, and inserted, at a time."""
DUMPS_CHUNK = 8
"""Brain dumps read, and inserted, at a time (each may be large)."""
SENSOR = "palaestrai.agent.sensor_information.SensorInformation"
ACTUATOR = "palaestrai.agent.actuator_information.ActuatorInformation"
REWARD = "palaestrai.agent.reward_information.RewardInformation"
SIMTIME_KEYS = ("simtime_ticks", "simtime_timestamp")
EVALUATE = "evaluate"
"""The mode of palaestrAI's phase row, and steps, of evaluation rollouts."""
SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"
"""How SQLAlchemy writes a datetime into SQLite (and reads it back)."""
WORLD_COLUMNS = (
    "walltime",
    "simtime_ticks",
    "simtime_timestamp",
    "episode",
    "state_dump",
    "setpoints",
    "done",
    "mode",
    "execution_id",
    "step_index",
    "environment_id",
)
ACTION_COLUMNS = (
    "walltime",
    "agent_id",
    "episode",
    "simtimes",
    "sensor_readings",
    "actuator_setpoints",
    "applied_actuator_setpoints",
    "rewards",
    "objective",
    "done",
    "terminated",
    "truncated",
    "decision_index",
    "mode",
    "statistics",
    "rollout_worker_uid",
)
DUMP_COLUMNS = ("walltime", "state", "tag", "agent_id")
STATISTICS_SOURCES = ("brain", "muscle")
"""Merged in this order into ``muscle_actions.statistics``: the Muscle's win, as in palaestrAI."""

Time = Callable[[dt.datetime | None], Any]
"""A datetime as the target's driver takes it in a bulk insert."""


def insert_row(out: Connection, table: Table, **values: Any) -> int:
    """Insert one row into the target (None as SQL NULL, also in JSON columns); its id."""
    row = {name: null() if value is None else value for name, value in values.items()}
    key = out.execute(insert(table).values(**row)).inserted_primary_key
    return int(key[0]) if key is not None else 0


class _Side:
    """A phase row of the target with its environments (one row per worker, made when first
    asked for) and agents."""

    def __init__(self, out: Connection, phase_id: int, mode: str) -> None:
        self.out = out
        self.id = phase_id
        self.mode = mode
        self.muscle_mode = mode if mode in P.MODES else None
        """``muscle_actions.mode`` (palaestrAI's enum; NULL for a mode it lacks)."""
        self.environments: dict[int, _Environment] = {}
        """By palaestra's environment id."""
        self.agents: dict[int, tuple[str, int]] = {}
        """The agent's name and target id, by palaestra's agent id."""


class _Phase:
    """What the rows of one phase share: its environments and agents, the target's phase rows,
    the end times of its episodes, the target's form of times.

    palaestrAI records a phase's evaluation rollouts (``evaluate_every``) in a phase row of
    their own, of the same uid and number and mode ``evaluate``, with its own environments and
    agents, steps in mode ``evaluate``; palaestra keeps them as episodes of the phase
    (:func:`~palaestra.store.completed.is_rollout`), whose rows go there: that row is made
    when the first of them is written."""

    def __init__(self, src: Connection, out: Connection, instance_id: int, phase: AnyRow) -> None:
        self.out = out
        self.instance_id = instance_id
        self.row = phase
        self.time = _time_form(out)
        self.when = _episode_ends(src, phase, self.time)
        """The ``walltime`` of a step of (worker, episode), as the target takes it."""
        self.environment_rows = src.execute(
            select(t.environments.c.id, t.environments.c.uid, t.environments.c.name)
            .add_columns(t.environments.c.params, t.environments.c.seeds)
            .where(t.environments.c.experiment_run_phase_id == phase.id)
            .order_by(t.environments.c.id)
        ).all()
        self.agent_rows = src.execute(
            select(*t.agents.c["id", "name", "brain", "muscle", "objective", "config"])
            .where(t.agents.c.experiment_run_phase_id == phase.id)
            .order_by(t.agents.c.id)
        ).all()
        self.own = self._side(phase.mode, phase.config)
        self.evaluation: _Side | None = None

    def side(self, episode: int) -> _Side:
        """The phase row of the target that the rows of a stored ``episode`` go to."""
        if not is_rollout(self.row.config, episode):
            return self.own
        if self.evaluation is None:
            config = {"episodes": 1, "worker": self.row.workers, "mode": EVALUATE}
            self.evaluation = self._side(EVALUATE, config)  # (palaestrAI's config of it)
        return self.evaluation

    def _side(self, mode: str, config: Any) -> _Side:
        """Write a phase row of ``mode`` and ``config``, its environments and agents."""
        side = _Side(
            self.out,
            insert_row(
                self.out,
                P.experiment_run_phases,
                uid=self.row.name,
                number=self.row.index,
                mode=mode,
                configuration=config,
                experiment_run_instance_id=self.instance_id,
            ),
            mode,
        )
        for row in self.environment_rows:
            environment = side.environments[row.id] = _Environment(side, row)
            for worker in range(self.row.workers):
                environment.target(worker)
        for agent in self.agent_rows:
            side.agents[agent.id] = (
                agent.name,
                insert_row(
                    self.out,
                    P.agents,
                    uid=names.agent_conductor(agent.name),
                    name=agent.name,
                    muscles=[names.muscle(agent.name, w) for w in range(self.row.workers)],
                    configuration=_agent_configuration(agent),
                    experiment_run_phase_id=side.id,
                ),
            )
        return side


class _Environment:
    """An environment of a phase row in the target: one row per worker, made when first asked
    for."""

    def __init__(self, side: _Side, row: AnyRow) -> None:
        self.side = side
        self.uid: str = row.uid
        self.type: str = row.name
        self.params: dict[str, Any] = dict(row.params or {})
        self.seeds: list[Any] = list(row.seeds or [])
        self.ids: dict[int, int] = {}

    def target(self, worker: int) -> int:
        """The id of this environment's row of ``worker``."""
        found = self.ids.get(worker)
        if found is None:
            worker_uid = names.environment(self.uid, worker)
            seed = self.seeds[worker] if 0 <= worker < len(self.seeds) else None
            found = self.ids[worker] = insert_row(
                self.side.out,
                P.environments,
                uid=self.uid,
                worker_uid=worker_uid,
                environment_conductor_uid=names.environment_conductor(self.uid),
                type=self.type,
                parameters={**self.params, "uid": worker_uid, "seed": seed},
                static_model=None,
                experiment_run_phase_id=self.side.id,
            )
        return found


def export_phase(
    src: Connection, out: Connection, instance_id: int, phase: AnyRow
) -> dict[str, int]:
    """Write ``phase`` (a row of palaestra's ``experiment_run_phases``) and its rows into the
    target as a phase of the target's instance ``instance_id`` (and its evaluation rollouts
    as a phase of mode ``evaluate``: see :class:`_Phase`).

    Returns:
        The number of rows written of ``world_states``, ``muscle_actions`` and
        ``brain_states``.
    """
    shared = _Phase(src, out, instance_id, phase)
    states, simtimed = _world_states(src, shared)
    timed = {row.id: row.uid for row in shared.environment_rows if row.id in simtimed}
    return {
        "world_states": states,
        "muscle_actions": _muscle_actions(src, shared, timed),
        "brain_states": _brain_states(src, shared),
    }


def _episode_ends(src: Connection, phase: AnyRow, time: Time) -> Callable[[int, int], Any]:
    """When each episode of the phase ended (else began); for an episode without a row, when
    the phase ended (else began); as ``time`` gives it."""
    ends = {
        (worker, episode): time(ended or started)
        for worker, episode, started, ended in src.execute(
            select(*t.episodes.c["worker", "episode", "started_at", "ended_at"]).where(
                t.episodes.c.experiment_run_phase_id == phase.id
            )
        )
    }
    otherwise = time(phase.finished_at or phase.started_at)

    def when(worker: int, episode: int) -> Any:
        return ends.get((worker, episode), otherwise)

    return when


def _agent_configuration(agent: AnyRow) -> dict[str, Any]:
    """The agent as a run file gives it (name, brain, muscle, objective, sensors, ...)."""
    config = dict(agent.config or {})
    plugins = {
        part: {"name": getattr(agent, part), "params": config.pop(f"{part}_params", {})}
        for part in ("brain", "muscle", "objective")
    }
    return {"name": agent.name, **plugins, **config}


def _world_states(src: Connection, phase: _Phase) -> tuple[int, set[int]]:
    """Copy the phase's world states; how many, and which environments had a sim time."""
    environments = phase.own.environments
    if not environments:
        return 0, set()
    statement = (
        select(*t.world_states.c["environment_id", "worker", "episode", "step"])
        .add_columns(
            *_texts(t.world_states.c.sensors, t.world_states.c.setpoints), t.world_states.c.done
        )
        .add_columns(t.world_states.c.simtime)
        .where(t.world_states.c.environment_id.in_(list(environments)))
        .order_by(t.world_states.c.id)
    )
    written, simtimed = 0, set()
    time, when = phase.time, phase.when
    for part in _chunks(src, statement, CHUNK):
        batch = []
        for row in part:
            if row.simtime is not None:
                simtimed.add(row.environment_id)
            ticks, stamp = _simtime(row.simtime)
            side = phase.side(row.episode)
            batch.append(
                (
                    when(row.worker, row.episode),
                    ticks,
                    time(stamp),
                    row.episode,
                    _infos(SENSOR, row.sensors),
                    _infos(ACTUATOR, row.setpoints),
                    bool(row.done),
                    side.mode,
                    names.controller(row.worker),
                    row.step,
                    side.environments[row.environment_id].target(row.worker),
                )
            )
        insert_values(phase.out, P.world_states, WORLD_COLUMNS, batch)
        written += len(batch)
    return written, simtimed


def _muscle_actions(src: Connection, phase: _Phase, timed: dict[int, str]) -> int:
    """Copy the phase's muscle actions, with the sim times of the environments in ``timed``
    (uid by palaestra's environment id) and the step's statistics; how many."""
    agents = phase.own.agents
    if not agents:
        return 0
    action = t.muscle_actions.c
    statement = (
        select(action.agent_id, action.worker, action.episode, action.step)
        .add_columns(*_texts(action.sensor_readings, action.actuator_setpoints, action.rewards))
        .add_columns(action.objective, action.done, action.terminated, action.truncated)
        .add_columns(*(_statistics(src, list(agents), source) for source in STATISTICS_SOURCES))
        .add_columns(*(cast(_simtime_at(i), Text).label(f"simtime_{i}") for i in timed))
        .where(action.agent_id.in_(list(agents)))
        .order_by(action.id)
    )
    uids = list(timed.values())
    written = 0
    for part in _chunks(src, statement, CHUNK):
        batch = []
        for row in part:
            side = phase.side(row.episode)
            name, agent_id = side.agents[row.agent_id]
            brain, muscle, *simtimes = tuple(row)[11:]
            setpoints = _infos(ACTUATOR, row.actuator_setpoints)
            batch.append(
                (
                    phase.when(row.worker, row.episode),
                    agent_id,
                    row.episode,
                    _json(_simtimes(uids, [_decoded(t) for t in simtimes])),
                    _infos(SENSOR, row.sensor_readings),
                    setpoints,
                    setpoints,
                    _infos(REWARD, row.rewards, value_ids=False),
                    row.objective,
                    row.done,
                    row.terminated,
                    row.truncated,
                    row.step,
                    side.muscle_mode,
                    _json({**(_decoded(brain) or {}), **(_decoded(muscle) or {})}),
                    names.muscle(name, row.worker),
                )
            )
        insert_values(phase.out, P.muscle_actions, ACTION_COLUMNS, batch)
        written += len(batch)
    return written


def _statistics(src: Connection, agent_ids: list[int], source: str) -> Label[Any]:
    """The statistics ``source`` recorded at a muscle action's step (NULL where none); a
    NULL column if it recorded none in the phase."""
    label = f"{source}_statistics"
    recorded = src.scalar(
        select(t.statistics.c.id)
        .where(t.statistics.c.agent_id.in_(agent_ids), t.statistics.c.source == source)
        .limit(1)
    )
    if recorded is None:
        return null().label(label)
    found = _at_step(
        t.statistics,
        "statistics",
        t.statistics.c.agent_id == t.muscle_actions.c.agent_id,
        t.statistics.c.source == source,
    )
    return cast(found, Text).label(label)


def _simtime_at(environment_id: int) -> Any:
    """The sim time of environment ``environment_id`` in the state a muscle action saw (its
    world state of the same worker, episode and step; none at an episode's first step)."""
    return _at_step(t.world_states, "simtime", t.world_states.c.environment_id == environment_id)


def _at_step(table: Table, column: str, *where: Any) -> Any:
    """``column`` of ``table``'s first row (by id) of ``where`` at a muscle action's worker,
    episode and step: a correlated scalar subquery."""
    action = t.muscle_actions.c
    return (
        select(table.c[column])
        .where(
            *where,
            table.c.worker == action.worker,
            table.c.episode == action.episode,
            table.c.step == action.step,
        )
        .order_by(table.c.id)
        .limit(1)
        .scalar_subquery()
    )


def _brain_states(src: Connection, phase: _Phase) -> int:
    """Copy the phase's brain dumps (to its own phase row); how many."""
    agents = phase.own.agents
    if not agents:
        return 0
    statement = (
        select(*t.brain_states.c["agent_id", "tag", "dump", "created_at"])
        .where(t.brain_states.c.agent_id.in_(list(agents)))
        .order_by(t.brain_states.c.id)
    )
    written = 0
    for part in _chunks(src, statement, DUMPS_CHUNK):
        batch = [
            (phase.time(row.created_at), row.dump, row.tag or None, agents[row.agent_id][1])
            for row in part
        ]
        insert_values(phase.out, P.brain_states, DUMP_COLUMNS, batch)
        written += len(batch)
    return written


# --- values ----------------------------------------------------------------------------------


def _chunks(src: Connection, statement: AnySelect, size: int) -> Iterator[list[AnyRow]]:
    """The rows of ``statement``, ``size`` at a time (not all held at once)."""
    result = src.execute(statement.execution_options(yield_per=size))
    for part in result.partitions():
        yield list(part)


def _infos(kind: str, text: str | None, value_ids: bool = True) -> str:
    """JSON text of values by uid (as palaestra's store holds it; rewards whose uid repeats
    as a list, see :func:`~palaestra.core.wire.records.stored_rewards`) as palaestrAI's
    information objects in jsonpickle's form, each with :func:`space_of` its value."""
    extra = {"value_ids": None} if value_ids else {}
    return _json(
        [
            {
                "py/object": kind,
                "py/state": {"uid": uid, "value": value, "space": space_of(value), **extra},
            }
            for uid, value in reward_items(_decoded(text))
        ]
    )


def _texts(*columns: Any) -> list[Any]:
    """JSON columns as their text: non-finite numbers stay the strings palaestra's store
    writes, which is what the target gets (decoding and encoding them again would cost more
    than the rest of the export)."""
    return [cast(column, Text).label(column.key) for column in columns]


def _decoded(text: str | None) -> Any:
    """JSON text as Python values (the strings of non-finite numbers kept)."""
    return None if text is None else msgspec.json.decode(text)


def _json(value: Any) -> str:
    """Values read with :func:`_decoded` (and plain ones) as JSON text."""
    return msgspec.json.encode(value).decode()


@functools.cache
def _box(shape: tuple[int, ...]) -> str:
    return f"Box(low=-inf, high=inf, shape={shape!r}, dtype=np.float64)"


_SCALAR = _box(())


def space_of(value: Any) -> str:
    """The space written with a value: palaestra stores none, so an unbounded Box of the
    value's shape (``()`` for a scalar, and for what has no shape: a list of lists of unequal
    lengths, or of other than numbers), as palaestrAI writes it, stands in. palaestrAI's
    classes need one to be decoded (jsonpickle)."""
    if isinstance(value, int | float):  # most are: the short way
        return _SCALAR
    return _box(_shape(value) or ())


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a number (``()``) or of a list of numbers or lists of one shape; None
    for anything else."""
    if isinstance(value, int | float) or (isinstance(value, str) and value in NON_FINITE):
        return ()
    if not isinstance(value, list):
        return None
    if not value:
        return (0,)
    inner = _shape(value[0])
    if inner is None or any(_shape(item) != inner for item in value[1:]):
        return None
    return (len(value), *inner)


def _simtime(value: Any) -> tuple[int | None, dt.datetime | None]:
    """Ticks and timestamp (naive UTC) of a stored sim time; None for what it lacks."""
    if not isinstance(value, dict):
        return None, None
    ticks = value.get("simtime_ticks")
    if not isinstance(ticks, int) or isinstance(ticks, bool):
        ticks = None
    stamp = value.get("simtime_timestamp")
    if not isinstance(stamp, str):
        return ticks, None
    try:
        parsed = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return ticks, None
    return ticks, naive_utc(parsed)


def naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` in UTC without its zone (palaestrAI's columns without a time zone)."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.UTC).replace(tzinfo=None)


def _simtimes(uids: list[str], values: list[Any]) -> dict[str, Any]:
    """palaestrAI's ``simtimes``: by uid of each environment that reports sim times, the one
    of the state the step saw; None where the store has none (an episode's first step: its
    start is not recorded), so that every row has the same environments."""
    return {
        uid: {key: value.get(key) if isinstance(value, dict) else None for key in SIMTIME_KEYS}
        for uid, value in zip(uids, values, strict=True)
    }


def _time_form(out: Connection) -> Time:
    """Datetimes as the target's driver takes them: SQLite, the text SQLAlchemy writes (UTC
    for aware ones); others, the datetimes."""
    if out.dialect.name != "sqlite":
        return lambda value: value

    def text(value: dt.datetime | None) -> str | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.strftime(SQLITE_TIME)

    return text
