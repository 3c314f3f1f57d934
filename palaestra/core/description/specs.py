"""The validated, immutable form of a run file, shared by every process of a run.

The run-file loader (:mod:`palaestra.experiment.runfile`) produces a :class:`RunSpec`; the
processes of a run receive the parts they need. All specs are msgspec Structs, so they travel
between processes as schema-checked msgpack.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Mode = Literal["train", "test"]

SEED_MAX = 2**63 - 1
"""The largest run seed: the store keeps it in a signed 64-bit column (BIGINT)."""
COUNT_MAX = 2**31 - 1
"""The largest count of episodes or workers: the store keeps them in 32-bit columns."""


class ClassSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A plug-in class named in the run file, with the keyword arguments for its constructor."""

    name: str
    params: dict[str, Any] = {}


class EnvironmentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One environment of a phase. ``uid`` prefixes its sensor and actuator ids (``uid.0``);
    ``reward`` and ``state_transformer`` are the plug-ins of the item's keys of those names."""

    name: str
    uid: str
    params: dict[str, Any] = {}
    reward: ClassSpec | None = None
    state_transformer: ClassSpec | None = None


class LoadSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where an agent's brain dump comes from. ``None`` fields mean "the same as this one"."""

    agent: str | None = None
    experiment_run: str | None = None
    phase: int | None = None
    strict: bool = False


class ReplaySpec(msgspec.Struct, frozen=True, kw_only=True):
    """Recorded steps an agent's Brain is pre-trained on (one item of the ``replay`` key): the
    ``muscle_actions`` of ``agent`` in phase ``phase`` of run ``experiment_run`` (its instance
    ``instance``, else its newest), fed ``repeat`` times. ``None`` means "this agent", "this
    run" and "the phase before this one". ``key`` and ``line`` say where the item was written,
    for errors found when the phase starts."""

    agent: str | None = None
    experiment_run: str | None = None
    phase: int | None = None
    instance: str | None = None
    repeat: int = 1
    key: str = ""
    line: int | None = None


class MemoryLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How much of its transitions a Brain or a Muscle keeps in memory: at most ``rows`` rows
    and about ``bytes`` bytes (None: no byte bound); the oldest go first."""

    rows: int
    bytes: int | None = None


BRAIN_MEMORY = MemoryLimits(rows=100_000, bytes=256 << 20)
"""A Brain's memory unless the run file sets ``brain_memory``: its learning data."""
MUSCLE_MEMORY = MemoryLimits(rows=1_000, bytes=16 << 20)
"""A Muscle's memory unless the run file sets ``muscle_memory``: what its Objective reads."""


class DumpPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """A Brain dumps itself at the end of every ``every``-th episode its Muscles end (over all
    workers) and once more when the phase ends (the final dump); the store keeps the newest
    ``keep`` periodic dumps of each tag besides the final one."""

    every: int
    keep: int


class Resources(msgspec.Struct, frozen=True, kw_only=True):
    """What one process reserves on its node when the run is placed on a Ray cluster (the
    agent's ``resources`` for its Brain or Muscles); None: the run's default."""

    num_cpus: float | None = None
    num_gpus: float = 0.0


PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
"""Ray's placement-group strategies, as ``run_config.placement.strategy`` names them."""


class PlacementSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How a run's processes are placed on a Ray cluster (``run_config.placement``; read only
    with the runtime config's ``backend: ray``)."""

    strategy: str = "PACK"
    num_cpus: float = 0.5
    """The CPUs each process reserves unless its agent's ``resources`` say otherwise."""


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One agent of a phase: its plug-ins, the sensor and actuator ids it uses and the bounds
    of its Brain's and Muscles' memories."""

    name: str
    brain: ClassSpec
    muscle: ClassSpec
    objective: ClassSpec
    sensors: tuple[str, ...]
    actuators: tuple[str, ...]
    load: LoadSpec | None = None
    replay: tuple[ReplaySpec, ...] = ()
    brain_memory: MemoryLimits = BRAIN_MEMORY
    muscle_memory: MemoryLimits = MUSCLE_MEMORY
    filters: tuple[ClassSpec, ...] = ()
    objective_stop: dict[int, float] = {}
    """A worker's episode ends once the mean of the agent's last ``N`` objective values
    reaches ``objective_stop[N]`` (palaestrAI's AgentObjectiveTerminationCondition)."""
    phase_stop: dict[int, float] = {}
    """The phase ends once, for one worker, the mean of the Brain's average objective at the
    end of its last ``N`` episodes reaches ``phase_stop[N]`` (the ``phase_avgN`` rules of
    palaestrAI's AgentObjectiveTerminationCondition as the run's condition)."""
    dump: DumpPolicy | None = None
    """When the Brain dumps itself (None: at the end of each episode, and at the phase's end
    if it learned since)."""
    hot_reload: bool = False
    """Reload the agent's Muscle, Brain and Objective modules when their source files change
    (``experiment-start --reload`` sets it on every agent)."""
    brain_resources: Resources | None = None
    """What the Brain reserves on a Ray node (``resources: {brain: ...}``)."""
    muscle_resources: Resources | None = None
    """What each Muscle reserves on a Ray node (``resources: {muscle: ...}``)."""


class SimulationSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The simulation controller of a phase and its termination conditions."""

    name: str
    conditions: tuple[ClassSpec, ...] = ()
    params: dict[str, Any] = {}


UPDATE_LAG_ASYNC = -1
"""``update_lag: async``: a Muscle never waits for its Brain; it acts with the policy it has
and applies the Brain's answers when they arrive."""
ENVS_PER_WORKER_MAX = 4096


class PhaseConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``update_lag`` 1 lets a Muscle act before its Brain answered the last step (the answer
    is applied one step later); 0 (default) waits for it, as palaestrAI does;
    :data:`UPDATE_LAG_ASYNC` never waits."""

    mode: Mode = "train"
    worker: int = 1
    episodes: int = 1
    update_lag: int = 0
    record_every: int = 1
    """Which steps get ``world_states`` and ``muscle_actions`` rows: 1 every step (the run
    file's ``record: all``), N every N-th of each episode and its last (``record: {every: N}``),
    0 none, only ``episodes`` rows (``record: episodes``)."""
    evaluate_every: int = 0
    """Training episodes between evaluations (palaestrAI's key); 0: none."""
    step_rate: float = 0.0
    """Environment steps per second of wall-clock time, paced without backlog (a late step is
    not followed by a burst); 0: lockstep, as fast as the slowest participant."""
    envs_per_worker: int = 1
    """Environment instances one worker's Muscle serves at once, their observations batched
    into one ``propose_actions`` call per step round."""


class PhaseSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One phase of the schedule, with everything it inherited from the phases before it."""

    index: int
    name: str
    environments: tuple[EnvironmentSpec, ...]
    agents: tuple[AgentSpec, ...]
    simulation: SimulationSpec
    config: PhaseConfig


class RunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A whole, validated run file.

    Its names (``uid``, ``experiment_uid``, and each phase's, agent's and environment's)
    follow :mod:`palaestra.core.description.name_rules`; ``seed`` is from 0 to :data:`SEED_MAX`.
    """

    uid: str
    experiment_uid: str
    seed: int
    version: str
    phases: tuple[PhaseSpec, ...]
    conditions: tuple[ClassSpec, ...] = ()
    path: str = ""
    document: str = ""
    placement: PlacementSpec = PlacementSpec()
    """How its processes are placed on a Ray cluster (``backend: ray``)."""
    overrides: dict[str, Any] | None = None
    """The values a sweep (or ``palaestra.run(overrides=...)``) set, by dotted path; None if the
    run is the file as written."""


def with_hot_reload(run: RunSpec) -> RunSpec:
    """``run`` with ``hot_reload`` on for every agent of every phase (``experiment-start
    --reload``)."""
    replace = msgspec.structs.replace
    return replace(
        run,
        phases=tuple(
            replace(phase, agents=tuple(replace(a, hot_reload=True) for a in phase.agents))
            for phase in run.phases
        ),
    )
