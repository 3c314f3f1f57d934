"""The store's schema: SQLAlchemy 2 typed declarative models of every palaestra table.

Table names are part of the store's contract (queries and later migrations use them). Values of
sensors, actuators, rewards and configurations are plain JSON; timestamps are timezone-aware
UTC on every backend (SQLite stores them naive; :class:`UTCDateTime` restores the zone).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

RUN_STATUSES = ("running", "finished", "error", "cancelled")


def utcnow() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp stored in UTC and always read back timezone-aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the store only takes aware UTC times")
        return value.astimezone(dt.UTC)

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    """Declarative base of the store's models; ``Base.metadata`` is the whole schema."""

    type_annotation_map = {
        dt.datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
        str: String(255),
    }


class Experiment(Base):
    """An experiment: a name (``uid``) grouping runs."""

    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uid: Mapped[str] = mapped_column(unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ExperimentRun(Base):
    """A run file, identified by its ``uid``; executed once per instance."""

    __tablename__ = "experiment_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uid: Mapped[str] = mapped_column(unique=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id"), index=True)
    document: Mapped[str] = mapped_column(Text)
    file: Mapped[str] = mapped_column(String(1024))
    seed: Mapped[int] = mapped_column(BigInteger)  # 0 to 2^63 - 1, see core.specs.SEED_MAX
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    overrides: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    """The values a sweep set on the run file it derived this run from; None if run as written."""


class ExperimentRunInstance(Base):
    """One execution of a run: its status, why it ended, where and with what it ran."""

    __tablename__ = "experiment_run_instances"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uid: Mapped[str] = mapped_column(String(36), unique=True)
    experiment_run_id: Mapped[int] = mapped_column(ForeignKey("experiment_runs.id"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    started_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column()
    palaestra_version: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column()
    package_versions: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    code_revision: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source_instance_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The id of the instance this one replayed (``experiment-replay --record``; no foreign
    key, so that deleting a run's instances needs no order); None if a run made it."""
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    """The executor's last sign of life while the instance ran; old and ``running``: stale."""
    resumed_from_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """For an instance ``experiment-resume`` made, the id of the instance it continues."""


class ExperimentRunPhase(Base):
    """One phase of a run instance, by its index in the schedule."""

    __tablename__ = "experiment_run_phases"
    __table_args__ = (UniqueConstraint("experiment_run_instance_id", "index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_instance_id: Mapped[int] = mapped_column(
        ForeignKey("experiment_run_instances.id")
    )
    index: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column()
    mode: Mapped[str] = mapped_column(String(16))
    workers: Mapped[int] = mapped_column(Integer)
    episodes: Mapped[int] = mapped_column(Integer)
    config: Mapped[dict[str, Any]] = mapped_column()
    status: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column()


class Environment(Base):
    """An environment of a phase: its class, parameters and one seed per worker."""

    __tablename__ = "environments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(
        ForeignKey("experiment_run_phases.id"), index=True
    )
    uid: Mapped[str] = mapped_column()
    name: Mapped[str] = mapped_column()
    params: Mapped[dict[str, Any]] = mapped_column()
    seeds: Mapped[list[Any]] = mapped_column()


class Agent(Base):
    """An agent of a phase: its plug-in classes, configuration, seeds and loaded dump."""

    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("experiment_run_phase_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(ForeignKey("experiment_run_phases.id"))
    name: Mapped[str] = mapped_column()
    brain: Mapped[str] = mapped_column()
    muscle: Mapped[str] = mapped_column()
    objective: Mapped[str] = mapped_column()
    config: Mapped[dict[str, Any]] = mapped_column()
    seeds: Mapped[dict[str, Any]] = mapped_column()
    loaded_from: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))


class WorldState(Base):
    """One step of one environment in one worker: sensors, set points, rewards, done."""

    __tablename__ = "world_states"
    __table_args__ = (
        Index("ix_world_states_env_step", "environment_id", "worker", "episode", "step"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    sensors: Mapped[dict[str, Any]] = mapped_column()
    setpoints: Mapped[dict[str, Any]] = mapped_column()
    rewards: Mapped[dict[str, Any]] = mapped_column()
    done: Mapped[bool] = mapped_column(Boolean)
    terminated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    """The episode ended in a terminal state (gymnasium's ``terminated``); None in old rows."""
    truncated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    """The episode was cut short (gymnasium's ``truncated``, a time limit); None in old rows."""
    simtime: Mapped[Any | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    """The environment's simulation time (palaestrAI's ``SimTime``), None if it reports none."""
    late_by: Mapped[float | None] = mapped_column(Float, nullable=True)
    """With ``phase_config.step_rate``: seconds the step began after its due time (0.0 when on
    time); None in a lockstep phase and in old rows."""


class MuscleAction(Base):
    """One step of one agent in one worker: what it read, set, earned and its objective."""

    __tablename__ = "muscle_actions"
    __table_args__ = (
        Index("ix_muscle_actions_agent_step", "agent_id", "worker", "episode", "step"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    sensor_readings: Mapped[dict[str, Any]] = mapped_column()
    actuator_setpoints: Mapped[dict[str, Any]] = mapped_column()
    rewards: Mapped[dict[str, Any]] = mapped_column()
    reward: Mapped[float | None] = mapped_column(Float, nullable=True)
    objective: Mapped[float | None] = mapped_column(Float)
    done: Mapped[bool] = mapped_column(Boolean)
    terminated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    truncated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    stale_policy: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    """With ``update_lag: async``: the Muscle acted before its Brain's answer to an earlier step
    had arrived; None where updates are not asynchronous."""


class Episode(Base):
    """One episode of one worker in a phase: when it started and ended, how, and its rewards."""

    __tablename__ = "episodes"
    __table_args__ = (
        Index("ix_episodes_phase_worker_episode", "experiment_run_phase_id", "worker", "episode"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(ForeignKey("experiment_run_phases.id"))
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[dt.datetime] = mapped_column()
    ended_at: Mapped[dt.datetime | None] = mapped_column()
    steps: Mapped[int] = mapped_column(Integer)
    terminated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    truncated: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    rewards: Mapped[dict[str, Any]] = mapped_column()
    """Each agent's episode reward (the sum of its reward totals), by agent name."""


class RecordingGap(Base):
    """Steps of a phase's worker that ran while recording was paused (a replay stops there)."""

    __tablename__ = "recording_gaps"
    __table_args__ = (
        Index("ix_recording_gaps_phase_worker", "experiment_run_phase_id", "worker"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(ForeignKey("experiment_run_phases.id"))
    worker: Mapped[int] = mapped_column(Integer)
    from_episode: Mapped[int] = mapped_column(Integer)
    from_step: Mapped[int] = mapped_column(Integer)
    to_episode: Mapped[int | None] = mapped_column(Integer, nullable=True)
    to_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Where recording resumed; None while it is still paused (or the run ended paused)."""


class PluginRecord(Base):
    """A value a plug-in recorded at a step with ``context.record(key, value)``."""

    __tablename__ = "plugin_records"
    __table_args__ = (
        Index(
            "ix_plugin_records_phase_step",
            "experiment_run_phase_id",
            "source",
            "worker",
            "episode",
            "step",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(ForeignKey("experiment_run_phases.id"))
    source: Mapped[str] = mapped_column()  # the plug-in: e.g. "brain:<agent>", "env:<uid>"
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column()
    value: Mapped[Any | None] = mapped_column(JSON(none_as_null=True), nullable=True)


class CodeReload(Base):
    """A change of a plug-in's source file seen with hot reload on, and whether it took."""

    __tablename__ = "code_reloads"
    __table_args__ = (
        Index("ix_code_reloads_phase", "experiment_run_phase_id", "source", "worker"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_run_phase_id: Mapped[int] = mapped_column(ForeignKey("experiment_run_phases.id"))
    source: Mapped[str] = mapped_column()  # the process's plug-in: "muscle:<agent>", ...
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    """The first step the new code ran (a failed reload: the step at which it was tried)."""
    module: Mapped[str] = mapped_column()
    path: Mapped[str] = mapped_column(String(1024))
    ok: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The traceback that kept the old code running; None when the reload took."""
    at: Mapped[dt.datetime] = mapped_column()


class Statistic(Base):
    """What a Brain or a Muscle recorded with ``add_statistics`` at one step of a worker."""

    __tablename__ = "statistics"
    __table_args__ = (
        Index("ix_statistics_agent_step", "agent_id", "source", "worker", "episode", "step"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    source: Mapped[str] = mapped_column(String(16))  # "brain" or "muscle"
    worker: Mapped[int] = mapped_column(Integer)
    episode: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    statistics: Mapped[dict[str, Any]] = mapped_column()  # by key


class BrainState(Base):
    """A brain dump of an agent, tagged (e.g. ``final``), with the file it was also saved to."""

    __tablename__ = "brain_states"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"), index=True)
    tag: Mapped[str] = mapped_column()
    path: Mapped[str] = mapped_column(String(1024))
    dump: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
