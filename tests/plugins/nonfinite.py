"""Plug-ins whose values are infinite or NaN: sensors, set points and rewards."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyMuscle
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.environment import DummyEnvironment

CYCLE = (math.inf, -math.inf, math.nan, 1.5)
"""The value of step ``n`` (0 at the start) is ``CYCLE[n % 4]``."""


class NonFiniteEnvironment(DummyEnvironment):
    """Sensor ``0`` (a number) and ``1`` (a list) and the reward ``r`` take the values of
    :data:`CYCLE` in turn; one actuator, ``0``.

    The sensors, the reward and the actuator declare no space: NaN lies in no Box (gymnasium's
    ``contains`` says so too), and the environment process's checks refuse a sensor value or
    reward outside its space, as the Muscle's process refuses such a set point."""

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.iter = 0
        return self._sensors(), [ActuatorInformation(0.0, None, "0")]

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        self.iter += 1
        reward = RewardInformation(self._value(), None, "r")
        return self._sensors(), [reward], self.iter >= self.max_iter

    def _value(self) -> float:
        return CYCLE[self.iter % len(CYCLE)]

    def _sensors(self) -> list[SensorInformation]:
        value = self._value()
        return [
            SensorInformation(value, None, "0"),
            SensorInformation([value, -value], None, "1"),
        ]


class NonFiniteMuscle(DummyMuscle):
    """Sets each actuator to the negated first sensor reading."""

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        for actuator in actuators_available:
            actuator(-float(sensors[0].value))
        return actuators_available, None
