"""The step path: the simulation controller, the environments, the Muscles and the Brains
(one game per worker, several games per worker, experiences and updates)."""

from __future__ import annotations

from typing import Any

import msgspec

from palaestra.core.description.specs import ClassSpec
from palaestra.core.wire.messages.base import InfoDesc, Msg
from palaestra.core.wire.messages.control import EpisodeAgent

# --- hot path: simulation controller <-> environment ---------------------------------------


class EnvStart(Msg, frozen=True, kw_only=True):
    """Start (or, with ``reset``, restart) the environment; answered by :class:`EnvBaseline`.
    ``check_values`` checks every step's sensor values and rewards against their spaces."""

    reset: bool = False
    check_values: bool = True
    episode: int | None = None
    """The number of the episode it starts; None: the one after the last (0 at first)."""


class EnvBaseline(Msg, frozen=True, kw_only=True):
    """The first game's sensors (with their values) and actuators, and each game's episode
    and sensor values (in the sensors' order; ``envs_per_worker``: one or more games)."""

    sensors: list[InfoDesc]
    actuators: list[InfoDesc]
    episodes: list[int] = []
    games: list[list[Any]] = []


class EnvState(Msg, frozen=True, kw_only=True):
    """Sensor values in baseline order, rewards, whether the episode is over, and whether it
    ended in a terminal state or was cut short (None: the environment does not say)."""

    values: list[Any]
    rewards: list[InfoDesc]
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None


# --- hot path: simulation controller <-> muscle --------------------------------------------


class AgentEpisode(Msg, frozen=True, kw_only=True):
    """An episode begins: the spaces of the agent's sensors and actuators, in their order.

    ``driver`` is the uid of the environment that plays the worker's games over its link
    (see :class:`EnvLanes`), or empty if the simulation controller plays them."""

    episode: int
    sensors: list[InfoDesc]
    actuators: list[InfoDesc]
    driver: str = ""
    evaluation: bool = False
    """An evaluation rollout: the Muscle acts in test mode and tells its Brain nothing."""
    lanes: int = 1
    """The worker's games (``phase_config.envs_per_worker``): the driver sends
    :class:`AgentSteps` of them until its last."""


class AgentStep(Msg, frozen=True, kw_only=True):
    """One game's observation in :class:`AgentSteps`: sensor values (agent's order), the
    rewards since the agent last acted, ``done``, and
    how the episode ended (``terminated``/``truncated``: False before its end, None where the
    environments do not say)."""

    step: int
    values: list[Any]
    rewards: list[InfoDesc] | None
    done: bool
    terminated: bool | None = None
    truncated: bool | None = None


class AgentActions(Msg, frozen=True, kw_only=True):
    """A Muscle's set points for one game (by full actuator uid; empty: its acknowledgement of
    an :class:`AgentEpisode`). ``stop``: the agent reached an objective rule
    (``AgentObjectiveTerminationCondition``), so this step is the episode's last;
    ``end_phase``: the agent's Brain reached its phase rule (``phase_avgN``), so the worker
    runs no further episode."""

    setpoints: dict[str, Any]
    stop: bool = False
    end_phase: bool = False


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
    policy: str = "palaestra.core.turns:AllAct"
    """The :class:`~palaestra.core.turns.TurnPolicy` each game follows (``module:Class``)."""
    step_rate: float = 0.0
    """Pace the rounds at this many per second (each a step of each of its games; see
    :mod:`palaestra.core.pacing`); 0: lockstep."""
    until: int = 0
    """Each game stops once it played this many episodes (``evaluate_every``'s next
    evaluation; counted from ``first_episode``); 0: no such stop."""
    evaluation: bool = False
    """Evaluation rollouts: each game plays one episode, its phase's conditions not asked."""


class LaneEpisodeDone(Msg, frozen=True, kw_only=True):
    """An episode of one game ended (``worker``: the game's lane, see ``envs_per_worker``):
    its steps, when it started and ended (Unix seconds), how it ended, and each agent's
    episode reward by its Muscle's process (see :class:`~palaestra.core.turns.EpisodeResult`)."""

    worker: int
    episode: int
    steps: int
    started_at: float
    ended_at: float
    terminated: bool | None = None
    truncated: bool | None = None
    rewards: dict[str, float] = {}


class EnvLanesDone(Msg, frozen=True, kw_only=True):
    """All games of an environment are over: the steps of all of them; whether a game stopped
    at :attr:`EnvLanes.until` (``reached``) and whether every game's phase is over."""

    steps: int
    end_phase: bool = False
    reached: bool = False
    over: bool = True


class EnvRound(Msg, frozen=True, kw_only=True):
    """From a simulation controller that plays the worker's games in rounds (see
    :mod:`palaestra.core.rounds`): step these games (their indices) with these set points (by
    the environment's own actuator ids) and ``stop`` flags (an agent's objective rule: the
    step is the game's last); ``late_by``: how late the round's step began in a paced phase
    (0.0: on time; see :mod:`palaestra.core.pacing`), for the ``world_states`` rows (None:
    lockstep). Answered by :class:`EnvRoundDone`."""

    games: list[int]
    setpoints: list[dict[str, Any]]
    stop: list[bool]
    late_by: float | None = None


class EnvRoundDone(Msg, frozen=True, kw_only=True):
    """Each stepped game's state, in the order of :attr:`EnvRound.games`."""

    states: list[EnvState]


class EnvRestart(Msg, frozen=True, kw_only=True):
    """From a simulation controller that plays the worker's games in rounds: start the next
    episode of these games (their episode ended); answered by :class:`EnvBaseline` (its
    ``episodes`` and ``games``: of these games)."""

    games: list[int]


# --- hot path: muscle <-> brain ------------------------------------------------------------


class Transition(msgspec.Struct, frozen=True, array_like=True):
    """A completed transition's sensor values (the agent's order), set points by actuator uid
    and rewards: what a Brain's memory row is made of when it is read."""

    sensors: list[Any]
    setpoints: dict[str, Any]
    rewards: list[InfoDesc]


class Experience(Msg, frozen=True, kw_only=True):
    """A Muscle's completed transition (if any: its ``objective`` value and how its episode
    ended with it) and its pickled ``data_for_brain`` (None for None: what most Muscles send,
    which needs no pickle), sent at step ``step`` of episode ``episode`` (where the Brain's
    statistics are recorded)."""

    worker: int
    transition: Transition | None
    data: bytes | None
    done: bool
    episode: int = 0
    step: int = 0
    objective: float = 0.0
    terminated: bool | None = None
    truncated: bool | None = None


class KeptExperience(Msg, frozen=True, kw_only=True, tag="Experience"):
    """An :class:`Experience` as a Brain decodes it (``messages.decode_kept``): its transition
    left encoded (``msgspec.Raw``: nil where there is none), a view of the message it came
    in. A memory row keeps it and decodes it when a plug-in first reads the row: a Brain that
    never reads its rows never builds their values, and a row holds one object for them."""

    worker: int
    transition: msgspec.Raw
    data: bytes | None
    done: bool
    episode: int = 0
    step: int = 0
    objective: float = 0.0
    terminated: bool | None = None
    truncated: bool | None = None

    @property
    def completed(self) -> bool:
        """Whether it carries a transition (the encoded nil is one byte; a transition more)."""
        return len(self.transition) > 1


class Experiences(Msg, frozen=True, kw_only=True):
    """One round's experience of a Muscle that serves several games: an :class:`Experience`
    per observation (its ``worker`` is the game's lane); answered by one
    :class:`BrainUpdate`. ``worker`` is the Muscle's own worker."""

    worker: int
    items: list[Experience]


class KeptExperiences(Msg, frozen=True, kw_only=True, tag="Experiences"):
    """:class:`Experiences` as a Brain decodes them: each a :class:`KeptExperience`."""

    worker: int
    items: list[KeptExperience]


class AgentEvaluate(Msg, frozen=True, kw_only=True):
    """To a Muscle after an evaluation's rollouts, passed on to its Brain: call
    ``evaluate_rollouts`` for evaluation ``evaluation`` (0, 1, ...); answered by
    :class:`AgentEvaluated`. ``worker``, ``episode`` and ``step``: where the rollouts ended
    (the first game's lane, its rollout's episode, and the step of its last experience, as an
    :class:`Experience` numbers it), where a Brain's hot reload at this message is recorded
    (-1: not known)."""

    evaluation: int
    worker: int = -1
    episode: int = -1
    step: int = -1


class BrainUpdate(Msg, frozen=True, kw_only=True):
    """The Brain's answer: a pickled update for ``Muscle.update``, or None; ``end_phase``
    once the agent reached its phase rule (``phase_avgN``)."""

    update: bytes | None
    end_phase: bool = False
