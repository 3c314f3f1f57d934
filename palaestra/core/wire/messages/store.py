"""The store's control: the executor and the store writer (rare, synchronous requests)."""

from __future__ import annotations

from typing import Any

import msgspec

from palaestra.core.wire.messages.base import Msg
from palaestra.core.wire.messages.rows import MuscleActionRow

# --- store control: executor <-> store writer (rare, synchronous) --------------------------


class PhaseEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    uid: str
    name: str
    params: dict[str, Any]
    seeds: list[int]


class PhaseAgent(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    brain: str
    muscle: str
    objective: str
    config: dict[str, Any]
    seeds: dict[str, Any]
    loaded_from: dict[str, Any] | None = None


class StoreRunStart(Msg, frozen=True, kw_only=True):
    """Record a run instance as started; answered by :class:`StoreIds`
    (``experiment``, ``run``, ``instance``)."""

    experiment_uid: str
    run_uid: str
    instance_uid: str
    document: str
    file: str
    seed: int
    palaestra_version: str
    host: str
    package_versions: dict[str, str] = {}
    code_revision: str | None = None
    overrides: dict[str, Any] | None = None
    resumed_from_id: int | None = None
    """For an ``experiment-resume`` instance, the id of the instance it continues."""


class StorePhaseStart(Msg, frozen=True, kw_only=True):
    """Record a phase with its environments and agents; answered by :class:`StoreIds`
    (``phase``, ``environment:<uid>`` and ``agent:<name>``)."""

    instance_id: int
    index: int
    name: str
    mode: str
    workers: int
    episodes: int
    config: dict[str, Any]
    environments: list[PhaseEnvironment]
    agents: list[PhaseAgent]


class StoreIds(Msg, frozen=True, kw_only=True):
    ids: dict[str, int]


class StoreFlush(Msg, frozen=True, kw_only=True):
    """Commit everything once each named producer has sent :class:`ProducerClosed`;
    answered by :class:`StoreAck`."""

    producers: list[str]


class StorePhaseEnd(Msg, frozen=True, kw_only=True):
    phase_id: int
    status: str


class StoreRunEnd(Msg, frozen=True, kw_only=True):
    """Mark the instance ``finished``, ``error`` or ``cancelled`` with the reason."""

    instance_id: int
    status: str
    reason: str = ""


class StoreAck(Msg, frozen=True, kw_only=True):
    pass


class StoreFindDump(Msg, frozen=True, kw_only=True):
    """Find the brain dumps of ``agent`` in phase ``phase`` of run ``run_uid`` (of its newest
    instance that has them), the newest of each tag; answered by :class:`StoreDump`."""

    run_uid: str
    agent: str
    phase: int
    instance_id: int | None = None
    """The asking instance, where ``run_uid`` is its own run: the dumps come from its phase
    (or, for a phase it skipped as a resumed instance, from the instances it continues), never
    from another instance of the run that runs at the same time."""
    instance_uid: str = ""
    """That instance's uid (where the dumps are files only: the run has no store)."""


class StoreDump(Msg, frozen=True, kw_only=True):
    """The dumps found: the newest of each tag, by
    :func:`palaestra.core.description.name_rules.dump_key` of the tag (empty if none), and the id
    of the newest of them (None if none, or found among the files)."""

    brain_state_id: int | None
    dumps: dict[str, bytes]


class RecordedSteps(msgspec.Struct, frozen=True, kw_only=True):
    """One worker's recorded ``muscle_actions`` of a replay source, in episode and step order,
    and how many times they are fed to the Brain; ``source`` says where they come from, and
    ``index`` which item of the agent's ``replay`` it is."""

    source: str
    worker: int
    rows: list[MuscleActionRow]
    repeat: int = 1
    index: int = 0


class StoreFindReplay(Msg, frozen=True, kw_only=True):
    """Find the recorded steps of ``agent`` in phase ``phase`` of run ``run_uid`` (instance
    ``instance``, else the newest; only episode 0 with ``first_episode``, to check that there
    are some); answered by :class:`StoreReplay`."""

    run_uid: str
    agent: str
    phase: int
    instance: str | None = None
    first_episode: bool = False
    continued: bool = False
    """``instance`` is the asking instance of its own run: its steps, and those of the
    instances it continues (a resumed instance skips the phases they finished), never those of
    another instance of the run running at the same time."""


class StoreReplay(Msg, frozen=True, kw_only=True):
    """The steps found, one item per worker, with the recorded agent's sensor and actuator
    uids; or, in ``problem``, why there are none (no such run, instance, phase or agent)."""

    problem: str = ""
    sensors: list[str] = []
    actuators: list[str] = []
    steps: list[RecordedSteps] = []
