"""The store's ORM classes, mapped onto the tables of :mod:`palaestra.store.tables` (the schema
itself lives there): the readers query through them (``select(ExperimentRun.uid)``), and the
commands that copy or resume runs work with their objects.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped

from palaestra.store import tables
from palaestra.store.tables import RUN_STATUSES, UTCDateTime, utcnow

__all__ = ["RUN_STATUSES", "UTCDateTime", "utcnow"]


class Base(DeclarativeBase):
    """Declarative base of the store's models; ``Base.metadata`` is the whole schema."""

    metadata = tables.metadata


class Experiment(Base):
    """An experiment: a name (``uid``) grouping runs."""

    __table__ = tables.experiments

    id: Mapped[int]
    uid: Mapped[str]
    created_at: Mapped[dt.datetime]


class ExperimentRun(Base):
    """A run file, identified by its ``uid``; executed once per instance."""

    __table__ = tables.experiment_runs

    id: Mapped[int]
    uid: Mapped[str]
    experiment_id: Mapped[int]
    document: Mapped[str]
    file: Mapped[str]
    seed: Mapped[int]
    created_at: Mapped[dt.datetime]
    overrides: Mapped[dict[str, Any] | None]


class ExperimentRunInstance(Base):
    """One execution of a run: its status, why it ended, where and with what it ran."""

    __table__ = tables.experiment_run_instances

    id: Mapped[int]
    uid: Mapped[str]
    experiment_run_id: Mapped[int]
    status: Mapped[str]
    reason: Mapped[str]
    started_at: Mapped[dt.datetime]
    finished_at: Mapped[dt.datetime | None]
    palaestra_version: Mapped[str]
    host: Mapped[str]
    package_versions: Mapped[dict[str, Any] | None]
    code_revision: Mapped[str | None]
    source_instance_id: Mapped[int | None]
    heartbeat_at: Mapped[dt.datetime | None]
    resumed_from_id: Mapped[int | None]


class ExperimentRunPhase(Base):
    """One phase of a run instance, by its index in the schedule."""

    __table__ = tables.experiment_run_phases

    id: Mapped[int]
    experiment_run_instance_id: Mapped[int]
    index: Mapped[int]
    name: Mapped[str]
    mode: Mapped[str]
    workers: Mapped[int]
    episodes: Mapped[int]
    config: Mapped[dict[str, Any]]
    status: Mapped[str]
    started_at: Mapped[dt.datetime]
    finished_at: Mapped[dt.datetime | None]


class Environment(Base):
    """An environment of a phase: its class, parameters and one seed per worker."""

    __table__ = tables.environments

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    uid: Mapped[str]
    name: Mapped[str]
    params: Mapped[dict[str, Any]]
    seeds: Mapped[list[Any]]


class Agent(Base):
    """An agent of a phase: its plug-in classes, configuration, seeds and loaded dump."""

    __table__ = tables.agents

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    name: Mapped[str]
    brain: Mapped[str]
    muscle: Mapped[str]
    objective: Mapped[str]
    config: Mapped[dict[str, Any]]
    seeds: Mapped[dict[str, Any]]
    loaded_from: Mapped[dict[str, Any] | None]


class WorldState(Base):
    """One step of one environment in one worker: sensors, set points, rewards, done."""

    __table__ = tables.world_states

    id: Mapped[int]
    environment_id: Mapped[int]
    worker: Mapped[int]
    episode: Mapped[int]
    step: Mapped[int]
    sensors: Mapped[dict[str, Any]]
    setpoints: Mapped[dict[str, Any]]
    rewards: Mapped[dict[str, Any]]
    done: Mapped[bool]
    terminated: Mapped[bool | None]
    truncated: Mapped[bool | None]
    simtime: Mapped[Any | None]
    late_by: Mapped[float | None]


class MuscleAction(Base):
    """One step of one agent in one worker: what it read, set, earned and its objective."""

    __table__ = tables.muscle_actions

    id: Mapped[int]
    agent_id: Mapped[int]
    worker: Mapped[int]
    episode: Mapped[int]
    step: Mapped[int]
    sensor_readings: Mapped[dict[str, Any]]
    actuator_setpoints: Mapped[dict[str, Any]]
    rewards: Mapped[dict[str, Any]]
    reward: Mapped[float | None]
    objective: Mapped[float | None]
    done: Mapped[bool]
    terminated: Mapped[bool | None]
    truncated: Mapped[bool | None]
    stale_policy: Mapped[bool | None]


class Episode(Base):
    """One episode of one worker in a phase: when it started and ended, how, and its rewards."""

    __table__ = tables.episodes

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    worker: Mapped[int]
    episode: Mapped[int]
    started_at: Mapped[dt.datetime]
    ended_at: Mapped[dt.datetime | None]
    steps: Mapped[int]
    terminated: Mapped[bool | None]
    truncated: Mapped[bool | None]
    rewards: Mapped[dict[str, Any]]


class RecordingGap(Base):
    """Steps of a phase's worker that ran while recording was paused (a replay stops there)."""

    __table__ = tables.recording_gaps

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    worker: Mapped[int]
    from_episode: Mapped[int]
    from_step: Mapped[int]
    to_episode: Mapped[int | None]
    to_step: Mapped[int | None]


class PluginRecord(Base):
    """A value a plug-in recorded at a step with ``context.record(key, value)``."""

    __table__ = tables.plugin_records

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    source: Mapped[str]
    worker: Mapped[int]
    episode: Mapped[int]
    step: Mapped[int]
    key: Mapped[str]
    value: Mapped[Any | None]


class CodeReload(Base):
    """A change of a plug-in's source file seen with hot reload on, and whether it took."""

    __table__ = tables.code_reloads

    id: Mapped[int]
    experiment_run_phase_id: Mapped[int]
    source: Mapped[str]
    worker: Mapped[int]
    episode: Mapped[int]
    step: Mapped[int]
    module: Mapped[str]
    path: Mapped[str]
    ok: Mapped[bool]
    error: Mapped[str | None]
    at: Mapped[dt.datetime]


class Statistic(Base):
    """What a Brain or a Muscle recorded with ``add_statistics`` at one step of a worker."""

    __table__ = tables.statistics

    id: Mapped[int]
    agent_id: Mapped[int]
    source: Mapped[str]
    worker: Mapped[int]
    episode: Mapped[int]
    step: Mapped[int]
    statistics: Mapped[dict[str, Any]]


class BrainState(Base):
    """A brain dump of an agent, tagged (e.g. ``final``), with the file it was also saved to."""

    __table__ = tables.brain_states

    id: Mapped[int]
    agent_id: Mapped[int]
    tag: Mapped[str]
    path: Mapped[str]
    dump: Mapped[bytes]
    created_at: Mapped[dt.datetime]
