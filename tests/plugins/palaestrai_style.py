"""Plug-ins written as a palaestrAI user writes them: every import is from ``palaestrai.*``.

Inside palaestra's processes these names map onto palaestra (palaestra.compat). The
environment returns palaestrAI's EnvironmentBaseline / EnvironmentState with a SimTime, the
Muscle compares its mode with palaestrAI's ``Mode`` and uses the information helpers, and the
Brain stores a dump through ``BrainDumper``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from palaestrai.agent import (
    LOG,
    ActuatorInformation,
    Brain,
    BrainDumper,
    Muscle,
    Objective,
    RewardInformation,
    SensorInformation,
)
from palaestrai.agent.util.information_utils import (
    coerce_and_set_values_to_info_objects,
    concat_flattened_values,
)
from palaestrai.environment.environment import Environment
from palaestrai.environment.environment_baseline import EnvironmentBaseline
from palaestrai.environment.environment_state import EnvironmentState
from palaestrai.types import Box, Discrete, Mode
from palaestrai.types.simtime import SimTime
from palaestrai.util import seeding


class CounterEnvironment(Environment):
    """Two Box sensors counting steps; one Box actuator; the reward is the set point."""

    def __init__(
        self, uid: str, broker_uri: str, seed: int, max_steps: int = 5, **params: Any
    ) -> None:
        super().__init__(uid=uid, broker_uri=broker_uri, seed=seed)
        self.max_steps = max_steps
        self.steps = 0
        self.np_rng, _ = seeding.np_random(seed)

    def _sensors(self) -> list[SensorInformation]:
        space = Box(low=0.0, high=1000.0, shape=())
        return [
            SensorInformation(float(self.steps), space, "count"),
            SensorInformation(float(self.np_rng.uniform(0, 1)), space, "noise"),
        ]

    def start_environment(self) -> EnvironmentBaseline:
        self.steps = 0
        return EnvironmentBaseline(
            sensors_available=self._sensors(),
            actuators_available=[ActuatorInformation(0.0, Box(-1.0, 1.0, shape=()), "push")],
            simtime=SimTime(simtime_ticks=0),
        )

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        self.steps += 1
        push = float(np.asarray(actuators[0].value).reshape(-1)[0])
        reward = RewardInformation(push, Box(-1.0, 1.0, shape=()), "pushed")
        done = self.steps >= self.max_steps
        return EnvironmentState(
            sensor_information=self._sensors(),
            rewards=[reward, RewardInformation(1, Discrete(2), "alive")],
            done=done,
            simtime=SimTime(simtime_ticks=self.steps),
            terminated=done,
        )


class PushMuscle(Muscle):
    """Pushes with the Brain's latest gain in training, with 0.5 in testing."""

    def __init__(self, **params: Any) -> None:
        super().__init__()
        self.gain = 0.25

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        observation = concat_flattened_values(sensors)
        gain = self.gain if self.mode == Mode.TRAIN else 0.5
        coerce_and_set_values_to_info_objects([gain], actuators_available)
        return actuators_available, observation.tolist()

    def update(self, update: Any) -> None:
        if update is not None:
            self.gain = float(update)


class GainBrain(Brain):
    """Raises the gain by a tenth per observation; dumps the number of observations."""

    def __init__(self, **params: Any) -> None:
        super().__init__()
        self.seen = 0

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        self.seen += 1
        if self.seen == 1:
            LOG.info("%s got its first observation from %s", self.name, muscle_id)
        return min(1.0, 0.25 + 0.1 * self.seen)

    def store(self) -> None:
        BrainDumper.store_brain_dump(json.dumps({"seen": self.seen}).encode(), self._dumpers)


class PushObjective(Objective):
    """The sum of the newest rewards' values."""

    def internal_reward(self, memory: Any, **kwargs: Any) -> float:
        rewards = np.asarray(memory.tail(1).rewards, dtype=float)
        return float(np.nansum(rewards))
