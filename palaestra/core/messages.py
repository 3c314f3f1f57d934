"""Every message palaestra processes exchange: typed, frozen msgspec Structs in one union.

Framework messages are msgpack with a schema (`decode` rejects anything else), so nothing is
ever unpickled from a socket. Opaque user payloads (``data_for_brain``, brain updates) travel as
``bytes`` fields holding a pickle, only on the run's private ipc sockets (see
:mod:`palaestra.core.transport`).

Values of sensors, actuators and rewards are plain JSON-able Python (numbers and nested lists),
the same form the store writes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from palaestra.core.specs import AgentSpec, ClassSpec, EnvironmentSpec, Mode


class Msg(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag=True,
    array_like=True,
    forbid_unknown_fields=True,
):
    """Base of all messages; the tag (class name) selects the type on decoding."""


# --- data carried inside messages -------------------------------------------------------


class InfoDesc(msgspec.Struct, frozen=True, array_like=True):
    """A sensor, actuator or reward: uid, space description (``Space.to_dict()``), value."""

    uid: str
    space: dict[str, Any] | None
    value: Any = None


class ErrorInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An exception that ended a process, as data: printed once by the executor and stored.

    ``kind`` is the exception's class name; ``run_exit_code`` the exit code it gives the run
    (a :class:`~palaestra.core.errors.PalaestraError` knows its own: a ``StoreError`` gives 3,
    invalid input 2; anything else 1), so the class of an error survives the trip between
    processes. ``exit_code`` is the exit code of the process that ended, where one did.
    """

    process: str
    kind: str
    message: str
    traceback: str = ""
    plugin: str = ""
    exit_code: int | None = None
    run_exit_code: int = 1

    def describe(self) -> str:
        where = f"{self.process} ({self.plugin})" if self.plugin else self.process
        text = f"{where}: {self.kind}: {self.message}" if self.kind else f"{where}: {self.message}"
        if self.traceback:
            tail = "\n".join(self.traceback.rstrip().splitlines()[-6:])
            text = f"{text}\n{tail}"
        return text


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
    data_path: str = ""
    """The runtime config's ``data_path`` (where an environment writes files, e.g. frames)."""
    """The run, its execution and the phase: what palaestrAI's reset request tells."""
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
    :func:`palaestra.core.name_rules.dump_key` of the tag (empty: none)."""
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


class EnvironmentEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    uid: str
    endpoint: str


class SimulationSetup(Msg, frozen=True, kw_only=True):
    """To a simulation controller: start these environments; answered by the baseline."""

    environments: list[EnvironmentEndpoint]
    first_episode: int = 0
    """The number of the worker's first episode (resumed: later than 0; see
    :class:`SimulationRun`), as its environments number it."""


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


class EpisodeAgent(msgspec.Struct, frozen=True, kw_only=True):
    """An agent as an environment that drives an episode sees it."""

    process: str
    sensors: list[str]
    acts_here: bool


class EnvEpisode(Msg, frozen=True, kw_only=True):
    """To an environment: run one whole episode yourself, talking to the Muscles directly
    over their links (:mod:`palaestra.core.channel`).

    ``policy`` names the :class:`~palaestra.core.turns.TurnPolicy` (``module:Class``) that
    says who acts when. Answered by :class:`EnvEpisodeDone` when the conditions end the
    episode.
    """

    agents: list[EpisodeAgent]
    policy: str
    conditions: list[ClassSpec]
    step_rate: float = 0.0
    """Pace the steps at this many per second (see :mod:`palaestra.core.pacing`); 0: lockstep."""


class EnvEpisodeDone(Msg, frozen=True, kw_only=True):
    """The episode an environment drove is over: its steps, when it started and ended (Unix
    seconds), how it ended, and each agent's episode reward by its Muscle's process (see
    :class:`~palaestra.core.turns.EpisodeResult`)."""

    steps: int
    end_phase: bool = False
    """An agent's Brain reached its phase rule: the worker runs no further episode."""
    started_at: float = 0.0
    ended_at: float = 0.0
    terminated: bool | None = None
    truncated: bool | None = None
    rewards: dict[str, float] = {}


class SimulationBaseline(Msg, frozen=True, kw_only=True):
    """From a simulation controller: the sensors and actuators of all its environments."""

    worker: int
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]


class SimulationDone(Msg, frozen=True, kw_only=True):
    worker: int
    episodes: int
    steps: int


# --- hot path: simulation controller <-> environment ---------------------------------------


class EnvStart(Msg, frozen=True, kw_only=True):
    """Start (or, with ``reset``, restart) the environment; answered by :class:`EnvBaseline`.
    ``check_values`` checks every step's sensor values and rewards against their spaces."""

    reset: bool = False
    check_values: bool = True
    episode: int | None = None
    """The number of the episode it starts; None: the one after the last (0 at first)."""


class EnvBaseline(Msg, frozen=True, kw_only=True):
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]


class EnvStep(Msg, frozen=True, kw_only=True):
    """From the simulation controller: step once the set points of these Muscles arrived
    (each sends :class:`AgentActions` straight to the environment); answered by
    :class:`EnvState`."""

    expect: list[str]
    late_by: float | None = None
    """Seconds the step began after its due time in a paced phase (0.0: on time; see
    :mod:`palaestra.core.pacing`), for its ``world_states`` row; None: lockstep."""


class EnvState(Msg, frozen=True, kw_only=True):
    """Sensor values in baseline order, rewards, whether the episode is over, and whether it
    ended in a terminal state or was cut short (None: the environment does not say)."""

    values: list[Any]
    rewards: list[InfoDesc]
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None
    late_by: float | None = None
    """A paced step's lateness as recorded: the controller's, plus the time the environment
    then waited for late set points (None: lockstep)."""


# --- hot path: simulation controller <-> muscle --------------------------------------------


class AgentEpisode(Msg, frozen=True, kw_only=True):
    """An episode begins: the spaces of the agent's sensors and actuators, in their order.

    ``driver`` is the uid of the environment that sends the episode's steps over its link
    (see :class:`EnvEpisode`), or empty if the simulation controller sends them."""

    episode: int
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]
    driver: str = ""
    evaluation: bool = False
    """An evaluation rollout: the Muscle acts in test mode and tells its Brain nothing."""
    lanes: int = 0
    """With ``phase_config.envs_per_worker`` N > 1: N, and the driver sends
    :class:`AgentSteps` of all N games until its last (0: one game, :class:`AgentStep`)."""


class AgentStep(Msg, frozen=True, kw_only=True):
    """Sensor values (agent's order), the rewards since the agent last acted, ``done``, and
    how the episode ended (``terminated``/``truncated``: False before its end, None where the
    environments do not say)."""

    step: int
    values: list[Any]
    rewards: list[InfoDesc] | None
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None


class AgentActions(Msg, frozen=True, kw_only=True):
    """From a Muscle to an environment: set points by the environment's own actuator ids.
    Also a Muscle's (empty) answer to the last step of an episode. ``stop``: the agent
    reached an objective rule (``AgentObjectiveTerminationCondition``), so this step is the
    episode's last."""

    setpoints: dict[str, Any]
    stop: bool = False
    end_phase: bool = False
    """In the answer to an episode's last step: the agent's Brain reached its phase rule
    (``phase_avgN``), so the worker runs no further episode."""


# --- hot path: several games per worker (envs_per_worker) ---------------------------------


class AgentSteps(Msg, frozen=True, kw_only=True):
    """One round of a worker's N games for one Muscle: an observation per game that goes on
    (``lanes[k]`` is the game's index 0..N-1, ``episodes[k]`` its episode), in game order. A
    game whose episode ended has its observation with ``done`` here, followed by step 0 of its
    next episode if it plays one. ``last``: no game plays on; the Muscle answers, then the
    games are over."""

    lanes: list[int]
    episodes: list[int]
    steps: list[AgentStep]
    last: bool = False


class LaneActions(Msg, frozen=True, kw_only=True):
    """A Muscle's answer to :class:`AgentSteps`: set points per observation, in its order
    (empty for one with ``done``), by the environment's own actuator ids; ``stop`` per
    observation (an objective rule reached: that game's episode ends after this step);
    ``end_phase``: the agent's Brain reached its phase rule (no game begins another
    episode)."""

    setpoints: list[dict[str, Any]]
    stop: list[bool]
    end_phase: bool = False


class EnvLanes(Msg, frozen=True, kw_only=True):
    """To an environment that hosts N games: play them all, each its ``episodes`` episodes (or
    until the ``conditions`` end its phase), resetting each as its episodes end. Each episode's
    end is told by :class:`LaneEpisodeDone`; answered by :class:`EnvLanesDone`."""

    agents: list[EpisodeAgent]
    conditions: list[ClassSpec]
    episodes: int
    first_episode: int = 0


class LaneEpisodeDone(Msg, frozen=True, kw_only=True):
    """An episode of one game ended (``worker``: the game's lane, see ``envs_per_worker``):
    what :class:`EnvEpisodeDone` says of an episode."""

    worker: int
    episode: int
    steps: int
    started_at: float
    ended_at: float
    terminated: bool | None = None
    truncated: bool | None = None
    rewards: dict[str, float] = {}


class EnvLanesDone(Msg, frozen=True, kw_only=True):
    """All games of an environment are over: the steps of all of them."""

    steps: int
    end_phase: bool = False


# --- hot path: muscle <-> brain ------------------------------------------------------------


class Transition(msgspec.Struct, frozen=True, array_like=True):
    """Sensor values in the agent's order, set points by actuator uid, and what followed."""

    sensors: list[Any]
    setpoints: dict[str, Any]
    rewards: list[InfoDesc]
    objective: float
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None


class Experience(Msg, frozen=True, kw_only=True):
    """A Muscle's completed transition (if any) and its pickled ``data_for_brain``, sent at
    step ``step`` of episode ``episode`` (where the Brain's statistics are recorded)."""

    worker: int
    transition: Transition | None
    data: bytes
    done: bool
    episode: int = 0
    step: int = 0


class Experiences(Msg, frozen=True, kw_only=True):
    """One round's experience of a Muscle that serves several games: an :class:`Experience`
    per observation (its ``worker`` is the game's lane); answered by one
    :class:`BrainUpdate`. ``worker`` is the Muscle's own worker."""

    worker: int
    items: list[Experience]


class AgentEvaluate(Msg, frozen=True, kw_only=True):
    """To a Muscle after an evaluation's rollouts, passed on to its Brain: call
    ``evaluate_rollouts`` for evaluation ``evaluation`` (0, 1, ...); answered by
    :class:`AgentEvaluated`."""

    evaluation: int


class AgentEvaluated(Msg, frozen=True, kw_only=True):
    """The Brain's ``EvaluationResult``: ``metrics`` by name (None where a value is not a
    number); ``result`` False if ``evaluate_rollouts`` returned None."""

    agent: str
    evaluation: int
    result: bool
    metrics: dict[str, float | None] = {}
    checkpoint_id: str | None = None
    checkpoint_hash: str | None = None


class BrainUpdate(Msg, frozen=True, kw_only=True):
    """The Brain's answer: a pickled update for ``Muscle.update``, or None; ``end_phase``
    once the agent reached its phase rule (``phase_avgN``)."""

    update: bytes | None
    end_phase: bool = False


# --- store records -------------------------------------------------------------------------


class EpisodeEnded(Msg, frozen=True, kw_only=True):
    """One worker's episode ended: when it started and ended (Unix seconds), its steps, how it
    ended, and each agent's episode reward (the sum of its reward totals, by agent name).

    Sent by whoever ran the episode loop to the store writer (the ``episodes`` table) and to the
    ExperimentRun controller (progress). ``terminated``/``truncated`` are None where the
    environment did not say which.
    """

    phase: int
    worker: int
    episode: int
    started_at: float
    ended_at: float
    steps: int
    terminated: bool | None = None
    truncated: bool | None = None
    rewards: dict[str, float] = {}


class WorldStateRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``world_states``: an environment's step (an array on the wire, like a
    tuple)."""

    episode: int
    step: int
    sensors: dict[str, Any]
    """Sensor values by full uid (``<env uid>.<sensor id>``)."""
    setpoints: dict[str, Any]
    """The set points applied in this step, by full actuator uid."""
    rewards: dict[str, Any]
    """Reward values by reward uid."""
    done: bool
    simtime: Any = None
    """The environment's simulation time at this step (palaestrAI's ``SimTime`` as a plain
    dict), or None if it reports none."""
    terminated: bool | None = None
    """The environment reached a terminal state (None: it does not say)."""
    truncated: bool | None = None
    """The environment was cut short (None: it does not say)."""
    late_by: float | None = None
    """Seconds the step began after its due time (0.0: on time); None in a lockstep phase."""


class StatisticsRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``statistics``: what a Brain (after ``thinking``) or a Muscle (after its
    step) added with ``add_statistics``, at a step of a worker's episode."""

    source: str
    """``brain`` or ``muscle``."""
    worker: int
    """The Muscle's worker (for a Brain: of the Muscle whose experience it thought about)."""
    episode: int
    step: int
    values: dict[str, Any]
    """The statistics by key, plain JSON-able values."""


class MuscleActionRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``muscle_actions``: what an agent saw, did and got for it in one step."""

    episode: int
    step: int
    sensors: dict[str, Any]
    """The sensor values the Muscle acted on, by uid."""
    setpoints: dict[str, Any]
    """Its set points, by actuator uid."""
    rewards: dict[str, Any]
    """The rewards that followed, by reward uid."""
    objective: float | None
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None
    stale_policy: bool | None = None
    """With ``update_lag: async``: the Muscle acted before the Brain's answer to an earlier
    step had arrived; None otherwise."""


class Rows(Msg, frozen=True, kw_only=True):
    """A batch of rows of one table, ready to insert: each a tuple of the table's values in the
    order of :data:`palaestra.core.records.COLUMNS` (the producer shapes them, with the ids of
    its agent, environment or phase: see :mod:`palaestra.core.records`); the writer only
    inserts them. The one message that carries rows to the store writer."""

    table: str
    rows: list[tuple[Any, ...]]


class PluginRecordRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``plugin_records``: a value a plug-in recorded with ``context.record``."""

    source: str
    """The plug-in: ``brain:<agent>``, ``muscle:<agent>`` or ``env:<uid>``."""
    worker: int
    episode: int
    step: int
    key: str
    value: Any
    """Plain JSON."""


class CodeReloadRow(msgspec.Struct, frozen=True, array_like=True):
    """One row of ``code_reloads``: a plug-in's module changed (hot reload), and whether the
    new code took."""

    source: str
    """The plug-in: ``muscle:<agent>``, ``objective:<agent>`` or ``brain:<agent>``."""
    worker: int
    episode: int
    step: int
    """The first step the new code ran (a failed reload: the step at which it was tried)."""
    module: str
    path: str
    ok: bool
    error: str | None
    """The traceback that kept the old code running; None when it took."""
    at: float
    """When it was tried, seconds since the epoch."""


class RecordingGapMark(Msg, frozen=True, kw_only=True):
    """An environment worker's recording paused (``paused``) or resumed at a step: the first
    step not recorded, or the first recorded again (``recording_gaps``)."""

    phase_id: int
    worker: int
    episode: int
    step: int
    paused: bool


class EpisodeRows(Msg, frozen=True, kw_only=True):
    """The episodes that ended, of one simulation controller (phase ``phase_id`` in the
    store), for the ExperimentRun controller's progress (the store gets them as
    :class:`Rows`)."""

    phase_id: int
    rows: list[EpisodeEnded]


class BrainDump(Msg, frozen=True, kw_only=True):
    """A brain dump to store; ``keep`` > 0: a periodic one, after which the store keeps only
    the newest ``keep`` dumps of the agent with this tag (0: keep every one)."""

    agent_id: int
    tag: str
    path: str
    dump: bytes
    keep: int = 0


class ProducerClosed(Msg, frozen=True, kw_only=True):
    """The last message of a producer: everything it wrote precedes this."""

    producer: str


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


class StoreDump(Msg, frozen=True, kw_only=True):
    """The dumps found: the newest of each tag, by
    :func:`palaestra.core.name_rules.dump_key` of the tag (empty if none), and the id of the
    newest of them (None if none, or found among the files)."""

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


class StoreReplay(Msg, frozen=True, kw_only=True):
    """The steps found, one item per worker, with the recorded agent's sensor and actuator
    uids; or, in ``problem``, why there are none (no such run, instance, phase or agent)."""

    problem: str = ""
    sensors: list[str] = []
    actuators: list[str] = []
    steps: list[RecordedSteps] = []


Message = (
    Ready
    | Failed
    | Shutdown
    | EnvironmentSetup
    | EnvironmentsReady
    | AgentSetup
    | AgentsReady
    | SimulationSetup
    | SimulationRun
    | SimulationBaseline
    | SimulationDone
    | EnvStart
    | EnvBaseline
    | EnvStep
    | EnvEpisode
    | EnvEpisodeDone
    | EnvState
    | AgentEpisode
    | AgentStep
    | AgentActions
    | AgentSteps
    | LaneActions
    | EnvLanes
    | LaneEpisodeDone
    | EnvLanesDone
    | Experience
    | Experiences
    | AgentEvaluate
    | AgentEvaluated
    | BrainUpdate
    | Rows
    | RecordingGapMark
    | EpisodeEnded
    | EpisodeRows
    | BrainDump
    | ProducerClosed
    | StoreRunStart
    | StorePhaseStart
    | StoreIds
    | StoreFlush
    | StorePhaseEnd
    | StoreRunEnd
    | StoreAck
    | StoreFindDump
    | StoreDump
    | StoreFindReplay
    | StoreReplay
)

_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[Message] = msgspec.msgpack.Decoder(Message)


def encode(message: Msg) -> bytes:
    return _encoder.encode(message)


def decode(data: bytes) -> Message:
    """Decode one message; raises ``msgspec.ValidationError``/``DecodeError`` on bad input."""
    try:
        return _decoder.decode(data)
    except UnicodeDecodeError as exc:
        raise msgspec.DecodeError(f"invalid UTF-8 in a message: {exc}") from exc
