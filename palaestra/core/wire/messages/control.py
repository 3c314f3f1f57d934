"""The control plane: a parent and its children (setup, ready, failure, shutdown), the
simulation controller's runs and episodes."""

from __future__ import annotations

import msgspec

from palaestra.core.description.specs import AgentSpec, EnvironmentSpec, Mode
from palaestra.core.wire.messages.base import AgentEvaluated, ErrorInfo, InfoDesc, Msg
from palaestra.core.wire.messages.store import RecordedSteps

# --- control plane: parent <-> child ------------------------------------------------------


class Ready(Msg, frozen=True, kw_only=True):
    """A child is up; ``endpoints`` are the sockets it bound, by role."""

    name: str
    endpoints: dict[str, str] = {}


class Failed(Msg, frozen=True, kw_only=True):
    """A component failed; sent upward before the process exits non-zero."""

    error: ErrorInfo


class Shutdown(Msg, frozen=True, kw_only=True):
    """Stop cleanly: finish what is in flight, flush, exit 0."""

    reason: str = ""


class Busy(Msg, frozen=True, kw_only=True):
    """A stopping child is in a plug-in call that may take long (``call``:
    ``my_pkg:MyEnvironment.shutdown()``): the parent names it should the stop be late."""

    call: str


class EnvironmentSetup(Msg, frozen=True, kw_only=True):
    """To an environment conductor: start one environment process per worker."""

    environment: EnvironmentSpec
    environment_id: int
    phase_id: int
    """The phase's id in the store (of its plug-in records and recording gaps)."""
    workers: int
    seeds: list[int]
    answer_timeout: float = 300.0
    run_uid: str = ""
    instance_uid: str = ""
    phase_index: int = 0
    """The run, its execution and the phase: what palaestrAI's reset request tells."""
    data_path: str = ""
    """The runtime config's ``data_path`` (where an environment writes files, e.g. frames)."""
    record_every: int = 1
    """Which steps get a ``world_states`` row (see ``PhaseConfig.record_every``)."""
    envs_per_worker: int = 1
    """Instances per worker process (its games); ``seeds`` has one per game, worker ``w``'s
    games at ``w * envs_per_worker`` on."""


class EnvironmentsReady(Msg, frozen=True, kw_only=True):
    """From an environment conductor: the endpoint of each worker's environment."""

    uid: str
    endpoints: list[str]


class AgentSetup(Msg, frozen=True, kw_only=True):
    """To an agent conductor: spawn the Brain and one Muscle per worker."""

    agent: AgentSpec
    agent_id: int
    phase_id: int
    """The phase's id in the store (of its plug-in records and code reloads)."""
    run_uid: str
    phase_index: int
    phase_name: str
    mode: Mode
    workers: int
    brain_seed: int
    muscle_seeds: list[int]
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]
    dumps: dict[str, bytes] = {}
    """The brain dumps the agent starts from, the newest of each tag, by
    :func:`palaestra.core.description.name_rules.dump_key` of the tag (empty: none)."""
    dump_source: str = ""
    """Where ``dumps`` come from, in words (empty: nowhere, a fresh start)."""
    dump_dir: str = ""
    environments: list[dict[str, str]] = []
    """Per worker: the endpoint of each environment of the worker, by uid (the Muscle links to
    each; it sends set points to those it has actuators in)."""
    answer_timeout: float = 300.0
    update_lag: int = 0
    record_every: int = 1
    """Which steps get a ``muscle_actions`` row (see ``PhaseConfig.record_every``)."""
    replay: list[RecordedSteps] = []
    """The recorded steps the Brain is pre-trained on (the agent's ``replay`` sources)."""
    instance_uid: str = ""
    """The run's execution, as palaestrAI's ``evaluate_rollouts`` is told."""


class AgentsReady(Msg, frozen=True, kw_only=True):
    """From an agent conductor: each worker's Muscle endpoint."""

    name: str
    endpoints: list[str]


class AgentEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    endpoint: str
    sensors: list[str]
    actuators: list[str]
    agent_id: int = 0
    """The agent's id in the store (of its ``evaluations`` rows)."""


class EnvironmentEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    uid: str
    endpoint: str


class SimulationSetup(Msg, frozen=True, kw_only=True):
    """To a simulation controller: start these environments; answered by the baseline."""

    environments: list[EnvironmentEndpoint]
    first_episode: int = 0
    """The number of the worker's first episode (resumed: later than 0; see
    :class:`SimulationRun`), as its environments number it."""
    start_timeout: float = 60.0
    """Seconds the environments' first ``start_environment()`` (a co-simulation starting) may
    take, part of the phase's start (the controller's ``answer_timeout`` if that is longer)."""


class SimulationRun(Msg, frozen=True, kw_only=True):
    """To a simulation controller: run ``episodes`` episodes against these peers."""

    agents: list[AgentEndpoint]
    episodes: int
    mode: Mode
    evaluate_every: int = 0
    """After every ``evaluate_every`` episodes, an evaluation (see :class:`AgentEvaluate`);
    0: none."""
    first_episode: int = 0
    """Episodes already done (by a resumed instance's predecessors): the first one played is
    this one, numbered as the uninterrupted run numbers it."""
    step_rate: float = 0.0
    """Steps of the world per second of wall-clock time (``phase_config.step_rate``); 0:
    lockstep."""
    envs_per_worker: int = 1
    """Games per worker (``phase_config.envs_per_worker``): more than 1, the environment plays
    them all (:class:`EnvLanes`), each ``episodes`` episodes."""
    evaluated: list[list[AgentEvaluated]] = []
    """A resumed phase's: the agents' results of each evaluation the interrupted instance
    completed before ``first_episode`` (evaluation 0, 1, ...), which the termination
    conditions are told, in order, before the first episode (as the uninterrupted run told
    them)."""


class EpisodeAgent(msgspec.Struct, frozen=True, kw_only=True):
    """An agent as an environment that drives an episode sees it."""

    process: str
    sensors: list[str]
    acts_here: bool


class SimulationBaseline(Msg, frozen=True, kw_only=True):
    """From a simulation controller: the sensors and actuators of all its environments."""

    worker: int
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]


class SimulationDone(Msg, frozen=True, kw_only=True):
    worker: int
    episodes: int
    steps: int
