"""Reading the store: runs, phases and the records of a run instance as lists of plain dicts.

Every function takes a store URI (or an open :class:`~sqlalchemy.Engine`) and reads the newest
instance of a run unless ``instance`` (an instance uid) is given. Filters become WHERE clauses;
nothing is filtered in Python. JSON values come back as plain Python values and timestamps as
timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, Engine, Select, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from palaestra.core.errors import StoreError
from palaestra.store.engine import make_engine, mask_uri
from palaestra.store.models import (
    Agent,
    BrainState,
    Environment,
    Experiment,
    ExperimentRun,
    ExperimentRunInstance,
    ExperimentRunPhase,
    MuscleAction,
    WorldState,
)

Store = str | Engine
Row = dict[str, Any]

_Instance = ExperimentRunInstance
_Phase = ExperimentRunPhase


def runs(store: Store) -> list[Row]:
    """One row per run instance, oldest first.

    Returns:
        Dicts with ``run_uid``, ``experiment_uid``, ``instance_uid``, ``status``, ``reason``,
        ``started_at``, ``finished_at``, ``duration_s`` (None while running) and ``phases``
        (the number of phases started).
    """
    phase_count = (
        select(func.count(_Phase.id))
        .where(_Phase.experiment_run_instance_id == _Instance.id)
        .scalar_subquery()
    )
    statement = (
        select(
            ExperimentRun.uid.label("run_uid"),
            Experiment.uid.label("experiment_uid"),
            _Instance.uid.label("instance_uid"),
            _Instance.status,
            _Instance.reason,
            _Instance.started_at,
            _Instance.finished_at,
            phase_count.label("phases"),
        )
        .join(ExperimentRun, _Instance.experiment_run_id == ExperimentRun.id)
        .join(Experiment, ExperimentRun.experiment_id == Experiment.id)
        .order_by(_Instance.id)
    )
    rows = _fetch(store, statement)
    for row in rows:
        row["duration_s"] = _duration(row)
    return rows


def phases(store: Store, run_uid: str, *, instance: str | None = None) -> list[Row]:
    """The phases of a run instance, by index.

    Returns:
        Dicts with ``id``, ``index``, ``name``, ``mode``, ``workers``, ``episodes``,
        ``config``, ``status``, ``started_at`` and ``finished_at``.
    """
    statement = (
        select(
            _Phase.id,
            _Phase.index,
            _Phase.name,
            _Phase.mode,
            _Phase.workers,
            _Phase.episodes,
            _Phase.config,
            _Phase.status,
            _Phase.started_at,
            _Phase.finished_at,
        )
        .where(_instance_filter(_Phase.experiment_run_instance_id, run_uid, instance))
        .order_by(_Phase.index)
    )
    return _fetch(store, statement)


def world_states(
    store: Store,
    run_uid: str,
    phase: int | None = None,
    *,
    environment: str | None = None,
    instance: str | None = None,
) -> list[Row]:
    """The world states of a run instance, optionally of one phase (index) and environment.

    Returns:
        Dicts with ``phase``, ``environment``, ``worker``, ``episode``, ``step``, ``sensors``,
        ``setpoints``, ``rewards`` and ``done``, in insertion order.
    """
    statement = (
        select(
            _Phase.index.label("phase"),
            Environment.uid.label("environment"),
            WorldState.worker,
            WorldState.episode,
            WorldState.step,
            WorldState.sensors,
            WorldState.setpoints,
            WorldState.rewards,
            WorldState.done,
        )
        .join(Environment, WorldState.environment_id == Environment.id)
        .join(_Phase, Environment.experiment_run_phase_id == _Phase.id)
        .where(_instance_filter(_Phase.experiment_run_instance_id, run_uid, instance))
        .order_by(WorldState.id)
    )
    if phase is not None:
        statement = statement.where(_Phase.index == phase)
    if environment is not None:
        statement = statement.where(Environment.uid == environment)
    return _fetch(store, statement)


def muscle_actions(
    store: Store,
    run_uid: str,
    phase: int | None = None,
    agent: str | None = None,
    *,
    instance: str | None = None,
) -> list[Row]:
    """The muscle actions of a run instance, optionally of one phase (index) and agent (name).

    Returns:
        Dicts with ``phase``, ``agent``, ``worker``, ``episode``, ``step``,
        ``sensor_readings``, ``actuator_setpoints``, ``rewards``, ``objective`` and ``done``,
        in insertion order.
    """
    statement = (
        select(
            _Phase.index.label("phase"),
            Agent.name.label("agent"),
            MuscleAction.worker,
            MuscleAction.episode,
            MuscleAction.step,
            MuscleAction.sensor_readings,
            MuscleAction.actuator_setpoints,
            MuscleAction.rewards,
            MuscleAction.objective,
            MuscleAction.done,
        )
        .join(Agent, MuscleAction.agent_id == Agent.id)
        .join(_Phase, Agent.experiment_run_phase_id == _Phase.id)
        .where(_instance_filter(_Phase.experiment_run_instance_id, run_uid, instance))
        .order_by(MuscleAction.id)
    )
    if phase is not None:
        statement = statement.where(_Phase.index == phase)
    if agent is not None:
        statement = statement.where(Agent.name == agent)
    return _fetch(store, statement)


def brain_states(
    store: Store,
    run_uid: str,
    agent: str | None = None,
    *,
    instance: str | None = None,
    with_dump: bool = False,
) -> list[Row]:
    """The brain dumps of a run instance, optionally of one agent, oldest first.

    Returns:
        Dicts with ``id``, ``phase``, ``agent``, ``tag``, ``path``, ``created_at`` and, with
        ``with_dump``, the ``dump`` bytes.
    """
    columns: list[Any] = [
        BrainState.id,
        _Phase.index.label("phase"),
        Agent.name.label("agent"),
        BrainState.tag,
        BrainState.path,
        BrainState.created_at,
    ]
    if with_dump:
        columns.append(BrainState.dump)
    statement = (
        select(*columns)
        .join(Agent, BrainState.agent_id == Agent.id)
        .join(_Phase, Agent.experiment_run_phase_id == _Phase.id)
        .where(_instance_filter(_Phase.experiment_run_instance_id, run_uid, instance))
        .order_by(BrainState.id)
    )
    if agent is not None:
        statement = statement.where(Agent.name == agent)
    return _fetch(store, statement)


# --- helpers -------------------------------------------------------------------------------


def _instance_filter(column: Any, run_uid: str, instance: str | None) -> ColumnElement[bool]:
    """``column`` equals the id of the run's newest instance, or of the instance named."""
    chosen = (
        select(_Instance.id)
        .join(ExperimentRun, _Instance.experiment_run_id == ExperimentRun.id)
        .where(ExperimentRun.uid == run_uid)
    )
    if instance is None:
        chosen = chosen.order_by(_Instance.id.desc()).limit(1)
    else:
        chosen = chosen.where(_Instance.uid == instance)
    return column == chosen.scalar_subquery()


def _duration(row: Row) -> float | None:
    if row["finished_at"] is None or row["started_at"] is None:
        return None
    return (row["finished_at"] - row["started_at"]).total_seconds()


def _fetch(store: Store, statement: Select[Any]) -> list[Row]:
    with _connected(store) as engine:
        try:
            with engine.connect() as connection:
                return [dict(row._mapping) for row in connection.execute(statement)]
        except SQLAlchemyError as exc:
            uri = engine.url.render_as_string(hide_password=True)
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise StoreError(f"store {uri}: cannot read: {reason}") from exc


@contextmanager
def _connected(store: Store) -> Iterator[Engine]:
    """The engine of ``store``; one made here from a URI is disposed afterwards."""
    if isinstance(store, Engine):
        yield store
        return
    _require_existing_sqlite(store)
    engine = make_engine(store)
    try:
        yield engine
    finally:
        engine.dispose()


def _require_existing_sqlite(uri: str) -> None:
    """Reading must not create an empty SQLite store where there was none."""
    try:
        url = make_url(uri)
    except ArgumentError:
        return  # make_engine reports it
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return
    if database.startswith("file:"):
        return
    if not Path(database).expanduser().exists():
        raise StoreError(f"store {mask_uri(uri)}: no such store file: {database}")
