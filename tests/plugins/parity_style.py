"""An environment written the way palaestrAI's published environments are (the continuous
random environment of palaestrai-environments): positional ``(uid, broker_uri, seed)``, its
own ``rng`` and ``seed`` assigned in the constructor, ``self.sensors``/``self.actuators``
lists (its actuators appended again on every start), an :class:`EnvironmentBaseline` and
:class:`EnvironmentState` with :class:`SimTime`, ``terminated``/``truncated``, and no readings
in the last step."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.simtime import SimTime
from palaestra.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.types import Box

START = datetime(2024, 1, 1, 12, 0)


class SimTimeEnvironment(Environment):
    """Sensors ``Sensor-<i>`` in [0, 10], actuators ``Actuator-<i>``; the reward is how close
    each actuator came to its sensor's rounded value. ``max_iter`` steps of one simulated
    minute each, from tick 100; the last step is ``truncated`` and reports no readings."""

    def __init__(
        self, uid: str, broker_uri: str, seed: int, max_iter: int = 5, num_sensors: int = 2
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.rng = np.random.default_rng(seed)  # its own, as palaestrAI's environments do
        self.seed = seed
        self.iter = 0
        self.max_iter = max_iter
        self.num_sensors = num_sensors

    def simtime(self) -> SimTime:
        return SimTime(100 + self.iter, START + timedelta(minutes=self.iter))

    def start_environment(self) -> EnvironmentBaseline:
        self.iter = 0
        self._read()
        for i in range(self.num_sensors):  # appended on every start, as palaestrAI's do
            self.actuators.append(
                ActuatorInformation(value=0.0, space=Box(0, 10, shape=()), uid=f"Actuator-{i}")
            )
        return EnvironmentBaseline(
            sensors_available=self.sensors,
            actuators_available=self.actuators,
            simtime=self.simtime(),
        )

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        self.actuators = actuators
        self.iter += 1
        distance = sum(
            abs(round(float(s.value)) - float(a.value))
            for s, a in zip(self.sensors, actuators, strict=True)
        )
        reward = RewardInformation(10.0 - distance, Box(-100, 10, shape=()), "Reward")
        if self.iter < self.max_iter:
            self._read()
            return EnvironmentState(
                sensor_information=self.sensors,
                rewards=[reward],
                done=False,
                simtime=self.simtime(),
            )
        return EnvironmentState(
            sensor_information=[],
            rewards=[reward],
            done=True,
            world_state={"iter": self.iter},
            simtime=self.simtime(),
            terminated=False,
            truncated=True,
        )

    def _read(self) -> None:
        self.sensors = [
            SensorInformation(
                value=float(self.rng.uniform() * 10), space=Box(0, 10, shape=()), uid=f"Sensor-{i}"
            )
            for i in range(self.num_sensors)
        ]


class WrongSimTimeEnvironment(SimTimeEnvironment):
    """Reports something that is not a sim time from its second step on."""

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        state = super().update(actuators)
        if self.iter > 1:
            bad: Any = 42
            state.simtime = bad
        return state


class ClashingActuatorEnvironment(SimTimeEnvironment):
    """Gives ``Actuator-0`` twice, with two different spaces."""

    def start_environment(self) -> EnvironmentBaseline:
        baseline = super().start_environment()
        baseline.actuators_available.append(
            ActuatorInformation(value=0, space=Box(0, 5, shape=()), uid="Actuator-0")
        )
        return baseline
