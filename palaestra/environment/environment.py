"""The Environment plug-in contract: the simulated world agents act in."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.plugin_records import PluginRecorder, RecordingContext
from palaestra.core.simtime import SimTime
from palaestra.environment import checks
from palaestra.environment.reset import (
    EnvironmentResetRequest,
    EnvironmentResetResponse,
    response_to,
    restarted,
)


@dataclass(frozen=True)
class EnvironmentContext(RecordingContext):
    """What palaestra tells an environment before ``start_environment``; through it, the
    environment records values (``context.record``) and pauses recording."""

    uid: str
    worker: int
    seed: int
    run_uid: str = ""
    instance_uid: str = ""
    phase_index: int = 0
    data_path: str = ""
    """The runtime config's ``data_path``: where files of the run go (empty: the default)."""
    recorder: PluginRecorder = field(default_factory=PluginRecorder)


@dataclass
class EnvironmentBaseline:
    """What an environment's start (or reset) returns: its sensors and actuators.

    palaestrAI's class, field for field; unpacking gives the two lists, as palaestra's
    ``(sensors, actuators)`` tuple does: ``sensors, actuators = baseline``.

    Attributes:
        sensors_available: The sensors, with their first readings.
        actuators_available: The actuators, with their default set points (or None).
        simtime: The simulated time at the start.
        static_world_model: Any static model of the world the environment publishes
            (palaestra does not read it).
    """

    sensors_available: list[SensorInformation]
    actuators_available: list[ActuatorInformation]
    simtime: SimTime = field(default_factory=lambda: SimTime(simtime_ticks=0))
    static_world_model: Any = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.sensors_available, self.actuators_available))


@dataclass
class EnvironmentState:
    """What an environment's step returns: sensor readings, rewards and whether it is done.

    palaestrAI's class, field for field (positional order included); unpacking gives
    ``(sensor_information, rewards, done)``, the tuple palaestra also takes. When
    :attr:`simtime` is set, palaestra records it with the step (``world_states.simtime``).

    Attributes:
        sensor_information: The readings after the step. A last step (``done``) may report
            none: the readings of the step before stand.
        rewards: The rewards for the step.
        done: Whether the episode is over.
        world_state: Anything the environment reports of its world (palaestra does not read
            it).
        simtime: The simulated time after the step, or None.
        terminated: True if the episode ended in a terminal state of the task, None if the
            environment does not say.
        truncated: True if it was cut off from outside the task (a time limit), None if the
            environment does not say.

    Raises:
        ValueError: ``terminated`` and ``truncated`` are both True, or one is True while
            ``done`` is not.
    """

    sensor_information: list[SensorInformation]
    rewards: list[RewardInformation]
    done: bool
    world_state: Any = None
    simtime: SimTime | None = None
    terminated: bool | None = None
    truncated: bool | None = None

    def __post_init__(self) -> None:
        if self.terminated is True and self.truncated is True:
            raise ValueError(
                "EnvironmentState: terminated and truncated are both True; at most one of "
                "them may be"
            )
        if (self.terminated is True or self.truncated is True) and not self.done:
            raise ValueError(
                f"EnvironmentState: terminated={self.terminated}, truncated={self.truncated} "
                "but done=False; an episode that terminated or was truncated is done"
            )

    def __iter__(self) -> Iterator[Any]:
        return iter((self.sensor_information, self.rewards, self.done))


@dataclass
class BatchState:
    """What :meth:`Environment.update_batch` returns: one step of N games, stacked.

    Each information object is the one :meth:`Environment.update` would return, its value the
    N games' values stacked along a first axis (an array of shape ``(N, *space.shape)``).

    Attributes:
        sensor_information: Every sensor the start declared, its value stacked.
        rewards: The rewards, their values stacked.
        terminated: N bools: the game reached a terminal state of the task (None: no game
            says; a list may hold None for a game that does not say, as its ``update`` may).
        truncated: N bools: the game was cut off from outside the task (a time limit; None
            as for ``terminated``).
        done: N bools: the game's episode is over; None: ``terminated | truncated``.
    """

    sensor_information: list[SensorInformation]
    rewards: list[RewardInformation]
    terminated: Any
    truncated: Any
    done: Any = None


class Environment(ABC):
    """A world with sensors, actuators and rewards, run in its own process.

    Implement :meth:`start_environment` (returns sensors and actuators, a tuple or
    :class:`EnvironmentBaseline`) and :meth:`update` (applies set points, returns sensors,
    rewards and done, a tuple or :class:`EnvironmentState`). The run file's ``params`` go to the
    constructor as keyword arguments; constructors may also take ``uid`` and ``seed``.
    Sensor and actuator uids are local (``"0"``); agents see them prefixed (``"myenv.0"``).
    Optionally implement :meth:`update_batch` to step several instances at once (a vector
    environment: ``phase_config.envs_per_worker``).

    While checking a run file, palaestra starts each environment once (constructor,
    :meth:`start_environment`, :meth:`shutdown`) to learn its ids; set
    ``check_ids_by_starting = False`` on a class that is too expensive to start twice.

    The constructor runs on the process's main thread; :meth:`start_environment`,
    :meth:`update` and :meth:`reset` run in a worker thread, where Python allows no
    ``signal.signal`` (palaestra raises an error that says so): install signal handlers in the
    constructor, if at all.
    """

    check_ids_by_starting: ClassVar[bool] = True
    replay_deterministic: ClassVar[bool] = True
    """Whether stepping a new instance (same params, same seed) with a run's recorded set
    points gives the recorded sensor values, rewards and ``done`` (``palaestra
    experiment-replay`` compares them); set False on a class that cannot promise it (a
    wall clock, an external simulator): its replay is then refused unless not compared."""

    def __init__(self, uid: str | None = None, broker_uri: str | None = None, seed: int = 0):
        self._own_uid = uid or ""
        self._own_seed = seed
        self.sensors: list[SensorInformation] = []
        """The environment's sensors, for its own use (palaestrAI's attribute)."""
        self.actuators: list[ActuatorInformation] = []
        """The environment's actuators, for its own use (palaestrAI's attribute)."""
        self.reward: Any = None

    def attach(self, context: EnvironmentContext) -> None:
        """Give the environment its context; called by palaestra before the first start.

        A :attr:`seed` or :attr:`rng` the environment assigned itself stays its own.
        """
        self.__dict__["_palaestra_context"] = context
        self.__dict__["_palaestra_rng"] = np.random.default_rng(self.seed)

    @property
    def context(self) -> EnvironmentContext | None:
        context: EnvironmentContext | None = self.__dict__.get("_palaestra_context")
        return context

    @property
    def uid(self) -> str:
        ctx = self.context
        return ctx.uid if ctx is not None else self.__dict__.get("_own_uid", "")

    @property
    def name(self) -> str:
        """The environment's uid in the run file (palaestrAI's ``name``)."""
        return self.uid

    @property
    def seed(self) -> int:
        """The environment's seed: palaestra derives it from the run's seed, the environment
        and the worker, unless the environment assigned one itself (``self.seed = ...``)."""
        own = self.__dict__.get("_palaestra_seed")
        if own is not None:
            return int(own)
        ctx = self.context
        return ctx.seed if ctx is not None else int(self.__dict__.get("_own_seed", 0))

    @seed.setter
    def seed(self, seed: int) -> None:
        self.__dict__["_palaestra_seed"] = seed

    @property
    def rng(self) -> np.random.Generator:
        """A generator seeded with :attr:`seed`: use it for every random choice. An
        environment may assign its own (``self.rng = ...``), which palaestra then keeps."""
        found = self.__dict__
        own = found.get("_palaestra_own_rng")
        if own is not None:
            return own  # type: ignore[no-any-return]
        rng = found.get("_palaestra_rng")
        if rng is None:  # (made once: a generator takes 8 µs to make)
            rng = found["_palaestra_rng"] = np.random.default_rng(self.seed)
        return rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self.__dict__["_palaestra_own_rng"] = rng

    @abstractmethod
    def start_environment(self) -> EnvironmentBaseline | tuple[Any, Any]:
        """Start (a new episode of) the world; return its sensors and actuators."""

    @abstractmethod
    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> EnvironmentState | tuple[Any, ...]:
        """Apply the actuators' set points and advance one step."""

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        """Step several instances of this class at once (optional; a vector environment).

        With ``phase_config.envs_per_worker`` N > 1 the worker's N games are instances of
        this class; where the class overrides this method, palaestra steps the games that act
        in a round with one call instead of one :meth:`update` each. ``games`` are the
        instances (each with its own seed, :attr:`rng` and state); ``setpoints`` has, for each
        actuator uid (local, as the start declared it), an array of the games' set points in
        the same order (shape ``(len(games), *space.shape)``, the space's dtype). Return a
        :class:`BatchState` whose row ``k`` is what ``games[k].update(...)`` would return for
        its set points: the rows palaestra stores and what the agents observe are then those
        of stepping each game alone. Every sensor the start declared is reported, every step.

        palaestra calls it only where a class overrides it (and no ``state_transformer`` is
        set); the default steps each game with :meth:`update`, as palaestra does otherwise,
        and reads each game's ``done``, ``terminated`` and ``truncated`` as a game's own step
        has them read: bools (numpy's too), ``terminated`` and ``truncated`` None where the
        game does not say (None in the batch where no game says; a list with None for the
        game beside bools of those that do, as each game alone stores it).

        Raises:
            PluginContractError: A game's ``update`` returned a ``done``, ``terminated`` or
                ``truncated`` that is no bool (nor None), naming its class and ``update``.
        """
        states = []
        for k, game in enumerate(games):
            actuators = [
                ActuatorInformation(values[k], None, uid) for uid, values in setpoints.items()
            ]
            states.append(_step(game, game.update(actuators)))
        first = states[0]
        return BatchState(
            [
                SensorInformation(
                    np.stack([s.sensors[i].value for s in states]), sensor.space, sensor.uid
                )
                for i, sensor in enumerate(first.sensors)
            ],
            [
                RewardInformation(
                    np.stack([s.rewards[i].value for s in states]), reward.space, reward.uid
                )
                for i, reward in enumerate(first.rewards)
            ],
            _flags([s.terminated for s in states]),
            _flags([s.truncated for s in states]),
            np.array([s.done for s in states], dtype=bool),
        )

    def reset(
        self, request: EnvironmentResetRequest | None = None
    ) -> EnvironmentBaseline | tuple[Any, Any] | EnvironmentResetResponse | Awaitable[Any]:
        """Begin a new episode; the default starts the environment again.

        palaestra calls it without ``request``. An override written for palaestrAI,
        ``async def reset(self, request)``, is given palaestrAI's request
        (:class:`~palaestra.environment.reset.EnvironmentResetRequest`) and awaited; given a
        request, this default returns palaestrAI's response (which ``await`` gives back), so
        such an override may ``return await super().reset(request)``.

        An asynchronous environment (``async def shutdown`` or ``start_environment``) is
        reset as palaestrAI resets it: :meth:`shutdown` first (its co-simulation of the last
        episode ends), then :meth:`start_environment`; the default returns that coroutine.
        """
        if inspect.iscoroutinefunction(self.shutdown) or inspect.iscoroutinefunction(
            self.start_environment
        ):
            return restarted(self, request)
        started = self.start_environment()
        return started if request is None else response_to(self, request, started)

    def shutdown(self) -> bool:
        """Release resources; the default does nothing."""
        return True


class _Step(NamedTuple):
    """A game's step in the default batch, its ends checked."""

    sensors: Sequence[SensorInformation]
    rewards: Sequence[RewardInformation]
    done: bool
    terminated: bool | None
    truncated: bool | None


def _step(game: Environment, result: Any) -> _Step:
    """What ``game.update`` returned (a state or a tuple) with its ``done``, ``terminated``
    and ``truncated`` checked (:mod:`~palaestra.environment.checks`) and plain."""
    if not isinstance(result, EnvironmentState):
        sensors, rewards, done = checks.state_parts(game, result)
        return _Step(list(sensors), list(rewards), checks.done_flag(game, done), None, None)
    return _Step(
        result.sensor_information,
        result.rewards,
        checks.done_flag(game, result.done),
        checks.end_flag(game, "terminated", result.terminated),
        checks.end_flag(game, "truncated", result.truncated),
    )


def _flags(flags: list[bool | None]) -> np.ndarray | list[bool | None] | None:
    """The games' ``terminated`` (or ``truncated``): None where none says; a bool each where
    every game says; else each game's own, None for a game that does not say (as the game
    stepped alone stores it, not False)."""
    said = [flag for flag in flags if flag is not None]
    if not said:
        return None
    if len(said) < len(flags):
        return flags
    return np.array(flags, dtype=bool)


def steps_in_batches(cls: type[Environment]) -> bool:
    """Whether environments of ``cls`` step their games in one call: the class overrides
    :meth:`Environment.update_batch` where it (or a subclass of it) overrides
    :meth:`Environment.update` too. A subclass that overrides only ``update`` steps each game
    with its own ``update``: an inherited batch would step past it."""
    batch_owner = _owner(cls, "update_batch")
    return batch_owner is not Environment and issubclass(batch_owner, _owner(cls, "update"))


def _owner(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that defines ``name``."""
    return next(c for c in cls.__mro__ if name in c.__dict__)
