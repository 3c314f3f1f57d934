"""The store's schema: every palaestra table as an SQLAlchemy Core :class:`~sqlalchemy.Table`.

Table names are part of the store's contract (queries and later migrations use them). Values of
sensors, actuators, rewards and configurations are plain JSON; timestamps are timezone-aware
UTC on every backend (SQLite stores them naive; :class:`UTCDateTime` restores the zone).

Every part that reads or writes the store works with these tables (``t.agents.c.name``), in
SQLAlchemy Core: the writer, the readers, the exporters, replay and the migrations' check. None
imports SQLAlchemy's ORM (about 0.13 s of imports with declarative classes), which kept the
process every run waits for at its start, the store writer, and every reading command slower.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import DateTime, TypeDecorator

from palaestra.core.description.name_rules import TEXT_MAX
from palaestra.store.driver import utcnow as utcnow


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


metadata = MetaData()
"""The whole schema."""


def _id() -> Column[int]:
    return Column("id", Integer, primary_key=True)


def _name(name: str, nullable: bool = False) -> Column[str]:
    """A string column of :data:`~palaestra.core.description.name_rules.TEXT_MAX` characters."""
    return Column(name, String(TEXT_MAX), nullable=nullable)


def _int(name: str, nullable: bool = False) -> Column[int]:
    return Column(name, Integer, nullable=nullable)


def _json(name: str, nullable: bool = False, none_as_null: bool = False) -> Column[object]:
    return Column(name, JSON(none_as_null=none_as_null), nullable=nullable)


def _time(name: str, nullable: bool = False, now: bool = False) -> Column[dt.datetime]:
    """A timestamp column; ``now``: the insert's time unless one is given."""
    return Column(name, UTCDateTime(), nullable=nullable, default=utcnow if now else None)


def _flag(name: str, nullable: bool = False) -> Column[bool]:
    return Column(name, Boolean, nullable=nullable)


def _of(table: str, column: str = "", index: bool = False) -> Column[int]:
    """The foreign key column ``<table minus s>_id`` (or ``column``) to ``table``'s id."""
    return Column(
        column or f"{table.removesuffix('s')}_id",
        Integer,
        ForeignKey(f"{table}.id"),
        nullable=False,
        index=index,
    )


def _steps() -> tuple[Column[int], ...]:
    """The worker, episode and step of a per-step row."""
    return (_int("worker"), _int("episode"), _int("step"))


experiments = Table(
    "experiments",
    metadata,
    _id(),
    Column("uid", String(255), nullable=False, unique=True),
    _time("created_at", now=True),
)
"""An experiment: a name (``uid``) grouping runs."""

experiment_runs = Table(
    "experiment_runs",
    metadata,
    _id(),
    Column("uid", String(255), nullable=False, unique=True),
    _of("experiments", index=True),
    Column("document", Text, nullable=False),
    Column("file", Text, nullable=False),  # any length: Linux allows 4,096 bytes (PATH_MAX)
    Column("seed", BigInteger, nullable=False),  # 0 to 2^63 - 1, see core.specs.SEED_MAX
    _time("created_at", now=True),
    _json("overrides", nullable=True, none_as_null=True),
    # overrides: the values a sweep set on the run file it derived this run from; None if run
    # as written
)
"""A run file, identified by its ``uid``; executed once per instance."""

experiment_run_instances = Table(
    "experiment_run_instances",
    metadata,
    _id(),
    Column("uid", String(36), nullable=False, unique=True),
    _of("experiment_runs", index=True),
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    _time("started_at", now=True),
    _time("finished_at", nullable=True),
    Column("palaestra_version", String(64), nullable=False),
    _name("host"),
    _json("package_versions", nullable=True),
    Column("code_revision", String(64), nullable=True),
    # source_instance_id: the id of the instance this one replayed (``experiment-replay
    # --record``; no foreign key, so that deleting a run's instances needs no order); None if a
    # run made it
    _int("source_instance_id", nullable=True),
    # heartbeat_at: the executor's last sign of life while the instance ran; old and
    # ``running``: stale
    _time("heartbeat_at", nullable=True),
    # resumed_from_id: for an instance ``experiment-resume`` made, the id of the instance it
    # continues
    _int("resumed_from_id", nullable=True),
)
"""One execution of a run: its status, why it ended, where and with what it ran."""

experiment_run_phases = Table(
    "experiment_run_phases",
    metadata,
    _id(),
    _of("experiment_run_instances"),
    _int("index"),
    _name("name"),
    Column("mode", String(16), nullable=False),
    _int("workers"),
    _int("episodes"),
    _json("config"),
    Column("status", String(16), nullable=False),
    _time("started_at", now=True),
    _time("finished_at", nullable=True),
    UniqueConstraint("experiment_run_instance_id", "index"),
)
"""One phase of a run instance, by its index in the schedule."""

environments = Table(
    "environments",
    metadata,
    _id(),
    _of("experiment_run_phases", index=True),
    _name("uid"),
    _name("name"),
    _json("params"),
    _json("seeds"),
)
"""An environment of a phase: its class, parameters and one seed per worker."""

agents = Table(
    "agents",
    metadata,
    _id(),
    _of("experiment_run_phases"),
    _name("name"),
    _name("brain"),
    _name("muscle"),
    _name("objective"),
    _json("config"),
    _json("seeds"),
    _json("loaded_from", nullable=True, none_as_null=True),
    UniqueConstraint("experiment_run_phase_id", "name"),
)
"""An agent of a phase: its plug-in classes, configuration, seeds and loaded dump."""

world_states = Table(
    "world_states",
    metadata,
    _id(),
    _of("environments"),
    *_steps(),
    _json("sensors"),
    _json("setpoints"),
    _json("rewards"),
    _flag("done"),
    # terminated: the episode ended in a terminal state (gymnasium's ``terminated``);
    # truncated: it was cut short (gymnasium's ``truncated``, a time limit); None in old rows
    _flag("terminated", nullable=True),
    _flag("truncated", nullable=True),
    # simtime: the environment's simulation time (palaestrAI's ``SimTime``), None if it
    # reports none
    _json("simtime", nullable=True, none_as_null=True),
    # late_by: with ``phase_config.step_rate``, seconds the step began after its due time (0.0
    # when on time); None in a lockstep phase and in old rows
    Column("late_by", Float, nullable=True),
    Index("ix_world_states_env_step", "environment_id", "worker", "episode", "step"),
)
"""One step of one environment in one worker: sensors, set points, rewards, done."""

muscle_actions = Table(
    "muscle_actions",
    metadata,
    _id(),
    _of("agents"),
    *_steps(),
    _json("sensor_readings"),
    _json("actuator_setpoints"),
    # rewards: by uid, {"reward": 1.0}; where a uid repeats (two environments of the phase
    # name a reward alike) a list of each in the order they came, [{"uid": ..., "value": ...}]
    _json("rewards"),
    # reward: the step's reward total, every reward's value counted
    Column("reward", Float, nullable=True),
    Column("objective", Float, nullable=True),
    _flag("done"),
    _flag("terminated", nullable=True),
    _flag("truncated", nullable=True),
    # stale_policy: with ``update_lag: async``, the Muscle acted before its Brain's answer to an
    # earlier step had arrived; None where updates are not asynchronous
    _flag("stale_policy", nullable=True),
    Index("ix_muscle_actions_agent_step", "agent_id", "worker", "episode", "step"),
)
"""One step of one agent in one worker: what it read, set, earned and its objective."""

episodes = Table(
    "episodes",
    metadata,
    _id(),
    _of("experiment_run_phases"),
    _int("worker"),
    _int("episode"),
    _time("started_at"),
    _time("ended_at", nullable=True),
    _int("steps"),
    _flag("terminated", nullable=True),
    _flag("truncated", nullable=True),
    _json("rewards"),  # each agent's episode reward (the sum of its reward totals), by name
    Index("ix_episodes_phase_worker_episode", "experiment_run_phase_id", "worker", "episode"),
)
"""One episode of one worker in a phase: when it started and ended, how, and its rewards."""

recording_gaps = Table(
    "recording_gaps",
    metadata,
    _id(),
    _of("experiment_run_phases"),
    _int("worker"),
    _int("from_episode"),
    _int("from_step"),
    # where recording resumed; None while it is still paused (or the run ended paused)
    _int("to_episode", nullable=True),
    _int("to_step", nullable=True),
    Index("ix_recording_gaps_phase_worker", "experiment_run_phase_id", "worker"),
)
"""Steps of a phase's worker that ran while recording was paused (a replay stops there)."""

plugin_records = Table(
    "plugin_records",
    metadata,
    _id(),
    _of("experiment_run_phases"),
    _name("source"),  # the plug-in: e.g. "brain:<agent>", "env:<uid>"
    *_steps(),
    _name("key"),
    _json("value", nullable=True, none_as_null=True),
    Index(
        "ix_plugin_records_phase_step",
        "experiment_run_phase_id",
        "source",
        "worker",
        "episode",
        "step",
    ),
)
"""A value a plug-in recorded at a step with ``context.record(key, value)``."""

code_reloads = Table(
    "code_reloads",
    metadata,
    _id(),
    _of("experiment_run_phases"),
    _name("source"),  # the process's plug-in: "muscle:<agent>", ...
    # step: the first step the new code ran (a failed reload: the step at which it was tried)
    *_steps(),
    _name("module"),
    Column("path", Text, nullable=False),
    _flag("ok"),
    # error: the traceback that kept the old code running; None when the reload took
    Column("error", Text, nullable=True),
    _time("at"),
    Index("ix_code_reloads_phase", "experiment_run_phase_id", "source", "worker"),
)
"""A change of a plug-in's source file seen with hot reload on, and whether it took."""

statistics = Table(
    "statistics",
    metadata,
    _id(),
    _of("agents"),
    Column("source", String(16), nullable=False),  # "brain" or "muscle"
    *_steps(),
    _json("statistics"),  # by key
    Index("ix_statistics_agent_step", "agent_id", "source", "worker", "episode", "step"),
)
"""What a Brain or a Muscle recorded with ``add_statistics`` at one step of a worker."""

evaluations = Table(
    "evaluations",
    metadata,
    _id(),
    _of("agents"),
    _int("evaluation"),  # its index in the phase: 0, 1, ...
    # training_episodes: the training episodes each game of the worker played before it
    # (``evaluate_every`` x (evaluation + 1))
    _int("training_episodes"),
    # worker, episode: the rollout the Brain judged (the first game's, its episode numbered as
    # ``episodes.episode``, rollouts counted)
    _int("worker"),
    _int("episode"),
    # metrics: what ``evaluate_rollouts`` returned, by name (None where a value is no number);
    # None: it returned no result
    _json("metrics", nullable=True, none_as_null=True),
    Column("checkpoint_id", Text, nullable=True),
    Column("checkpoint_hash", Text, nullable=True),
    _time("at"),
    Index("ix_evaluations_agent", "agent_id", "evaluation"),
)
"""One agent's result of one evaluation of a phase (``phase_config.evaluate_every``): the
metrics its Brain's ``evaluate_rollouts`` returned, which the run's termination conditions
judged."""

brain_states = Table(
    "brain_states",
    metadata,
    _id(),
    _of("agents", index=True),
    _name("tag"),
    Column("path", Text, nullable=False),
    Column("dump", LargeBinary, nullable=False),
    _time("created_at", now=True),
)
"""A brain dump of an agent, tagged (e.g. ``final``), with the file it was also saved to."""
