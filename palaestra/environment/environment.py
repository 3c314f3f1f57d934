"""The Environment plug-in contract: the simulated world agents act in."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation


@dataclass(frozen=True)
class EnvironmentContext:
    """What palaestra tells an environment before ``start_environment``."""

    uid: str
    worker: int
    seed: int


class EnvironmentBaseline(NamedTuple):
    sensors_available: list[SensorInformation]
    actuators_available: list[ActuatorInformation]


class EnvironmentState(NamedTuple):
    sensor_information: list[SensorInformation]
    rewards: list[RewardInformation]
    done: bool


class Environment(ABC):
    """A world with sensors, actuators and rewards, run in its own process.

    Implement :meth:`start_environment` (returns sensors and actuators, a tuple or
    :class:`EnvironmentBaseline`) and :meth:`update` (applies set points, returns sensors,
    rewards and done, a tuple or :class:`EnvironmentState`). The run file's ``params`` go to the
    constructor as keyword arguments; constructors may also take ``uid`` and ``seed``.
    Sensor and actuator uids are local (``"0"``); agents see them prefixed (``"myenv.0"``).

    While checking a run file, palaestra starts each environment once (constructor,
    :meth:`start_environment`, :meth:`shutdown`) to learn its ids; set
    ``check_ids_by_starting = False`` on a class that is too expensive to start twice.

    The constructor runs on the process's main thread; :meth:`start_environment`,
    :meth:`update` and :meth:`reset` run in a worker thread, where Python allows no
    ``signal.signal`` (palaestra raises an error that says so): install signal handlers in the
    constructor, if at all.
    """

    check_ids_by_starting: ClassVar[bool] = True

    def __init__(self, uid: str | None = None, broker_uri: str | None = None, seed: int = 0):
        self._own_uid = uid or ""
        self._own_seed = seed

    def attach(self, context: EnvironmentContext) -> None:
        """Give the environment its context; called by palaestra before the first start."""
        self.__dict__["_palaestra_context"] = context
        self.__dict__["_palaestra_rng"] = np.random.default_rng(context.seed)

    @property
    def context(self) -> EnvironmentContext | None:
        context: EnvironmentContext | None = self.__dict__.get("_palaestra_context")
        return context

    @property
    def uid(self) -> str:
        ctx = self.context
        return ctx.uid if ctx is not None else self.__dict__.get("_own_uid", "")

    @property
    def seed(self) -> int:
        ctx = self.context
        return ctx.seed if ctx is not None else int(self.__dict__.get("_own_seed", 0))

    @property
    def rng(self) -> np.random.Generator:
        """A generator seeded with :attr:`seed`: use it for every random choice."""
        return self.__dict__.setdefault("_palaestra_rng", np.random.default_rng(self.seed))  # type: ignore[no-any-return]

    @abstractmethod
    def start_environment(self) -> EnvironmentBaseline | tuple[Any, Any]:
        """Start (a new episode of) the world; return its sensors and actuators."""

    @abstractmethod
    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> EnvironmentState | tuple[Any, ...]:
        """Apply the actuators' set points and advance one step."""

    def reset(self) -> EnvironmentBaseline | tuple[Any, Any]:
        """Begin a new episode; the default starts the environment again."""
        return self.start_environment()

    def shutdown(self) -> bool:
        """Release resources; the default does nothing."""
        return True
