"""Plug-ins that break their contract in ways palaestra must catch and blame correctly.

Muscles that exit the process or fail to construct, a termination condition that raises, a
Muscle that sets actuators it was not given, and environments whose sensor values or rewards
do not fit their declared spaces.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.core.termination import TerminationCondition
from palaestra.environment import DummyEnvironment


class ExitingMuscle(DummyMuscle):
    """Leaves the process from ``method`` (on its third call of ``propose_actions``):
    ``how`` is ``exit`` (``sys.exit(0)``) or ``interrupt`` (``KeyboardInterrupt``)."""

    def __init__(self, method: str = "propose_actions", how: str = "exit", **params: Any):
        super().__init__(**params)
        self.method = method
        self.how = how
        self.calls = 0
        if method == "__init__":
            self._leave()

    def _leave(self) -> None:
        if self.how == "exit":
            sys.exit(0)
        raise KeyboardInterrupt

    def setup(self) -> None:
        if self.method == "setup":
            self._leave()

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        if self.method == "propose_actions" and self.calls >= 3:
            self._leave()
        return super().propose_actions(sensors, actuators_available)


class FailingInitMuscle(DummyMuscle):
    """Cannot be constructed."""

    def __init__(self, **params: Any) -> None:
        raise ValueError("no model file")


class FailingCondition(TerminationCondition):
    """Raises in ``episode_done`` after ``after`` calls (or in its constructor, ``after: -1``)."""

    def __init__(self, after: int = 3, **params: Any) -> None:
        super().__init__(**params)
        if after < 0:
            raise ValueError("bad condition params")
        self.after = after
        self.calls = 0

    def episode_done(self, environments_done: Sequence[bool]) -> bool:
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("condition broke")
        return any(environments_done)


class ForeignActuatorMuscle(DummyMuscle):
    """Also sets ``extra`` (an actuator uid it was not given) on every step."""

    def __init__(self, extra: str = "env.0", **params: Any) -> None:
        super().__init__(**params)
        self.extra = extra

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        setpoints, data = super().propose_actions(sensors, actuators_available)
        foreign = ActuatorInformation(np.float32(0.123), Box(0.0, 1.0, shape=()), self.extra)
        return [*setpoints, foreign], data


class OutOfSpaceMuscle(DummyMuscle):
    """Sets its first actuator to ``value`` (outside a ``Discrete(100)``: 100) from step ``at``
    on."""

    def __init__(self, value: int = 100, at: int = 1, **params: Any) -> None:
        super().__init__(**params)
        self.value = value
        self.at = at
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        setpoints, data = super().propose_actions(sensors, actuators_available)
        self.calls += 1
        if self.calls > self.at:
            setpoints[0](self.value)
        return setpoints, data


class ReturnShapeMuscle(DummyMuscle):
    """Returns what ``how`` says from ``propose_actions``: ``list`` (the set points alone, as
    palaestrAI allows), ``triple`` (set points, data and one item more) or ``dict``."""

    def __init__(self, how: str = "list", **params: Any) -> None:
        super().__init__(**params)
        self.how = how

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        setpoints, data = super().propose_actions(sensors, actuators_available)
        if self.how == "list":
            return list(setpoints)
        if self.how == "triple":
            return setpoints, data, "more"
        return {a.uid: a.value for a in setpoints}


class UnpicklableDataMuscle(DummyMuscle):
    """Hands its Brain a lambda as the data of every action, which cannot be pickled."""

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        setpoints, _ = super().propose_actions(sensors, actuators_available)
        return setpoints, lambda: None


class UnpicklableUpdateBrain(DummyBrain):
    """Answers every experience with a lambda, which cannot be pickled for the Muscle."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        return lambda: None


class BadValueEnvironment(DummyEnvironment):
    """A DummyEnvironment whose sensor ``"0"`` is a ``Box(0, 1, shape=(3,))``, and that breaks
    it on step ``at`` (0: already in its baseline) as ``how`` says:

    ``shape`` (a value of shape (2,)), ``outside`` (a value above the box), ``dtype`` (a
    string), ``reward`` (a reward outside its space), ``unknown`` (an extra sensor "zz"),
    ``missing`` (sensor "0" not reported).
    """

    def __init__(self, how: str = "shape", at: int = 1, **params: Any) -> None:
        super().__init__(**params)
        self.how = how
        self.at = at
        self.box = Box(0.0, 1.0, shape=(3,))

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        sensors, actuators = super().start_environment()
        return self._break(sensors, 0), actuators

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        sensors, rewards, done = super().update(actuators)
        sensors = self._break(sensors, self.iter)
        if self.how == "reward" and self.iter == self.at:
            rewards = [RewardInformation(10**6, Discrete(self.max_iter + 1), "Dummy Reward")]
        return sensors, rewards, done

    def _break(self, sensors: list[SensorInformation], step: int) -> list[SensorInformation]:
        value: Any = np.full(3, 0.5, dtype=np.float32)
        broken = step == self.at
        if broken and self.how == "shape":
            value = np.full(2, 0.5, dtype=np.float32)
        elif broken and self.how == "outside":
            value = np.full(3, 7.0, dtype=np.float32)
        elif broken and self.how == "dtype":
            value = "half"
        sensors = [SensorInformation(value, self.box, "0"), *sensors[1:]]
        if broken and self.how == "unknown":
            sensors.append(SensorInformation(1, Discrete(2), "zz"))
        if broken and self.how == "missing":
            sensors = sensors[1:]
        return sensors


class ShrinkingEnvironment(DummyEnvironment):
    """A DummyEnvironment whose resets (every start after the first) leave out sensor (or,
    with ``what: actuator``, actuator) ``"9"``, and whose steps then do too."""

    def __init__(self, what: str = "sensor", **params: Any) -> None:
        super().__init__(**params)
        self.what = what
        self.starts = 0

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.starts += 1
        sensors, actuators = super().start_environment()
        if self.starts > 1 and self.what == "sensor":
            sensors = sensors[:-1]
        if self.starts > 1 and self.what == "actuator":
            actuators = actuators[:-1]
        return sensors, actuators

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        sensors, rewards, done = super().update(actuators)
        if self.starts > 1 and self.what == "sensor":
            sensors = sensors[:-1]
        return sensors, rewards, done
