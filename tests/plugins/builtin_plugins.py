"""palaestrAI-style plug-ins for the built-ins' system test: an environment that asks the run
file's ``reward:`` for its reward, that Reward, a state transformer, and a Muscle that pushes
a constant. Every import is from ``palaestrai.*``, as a palaestrAI user writes them."""

from __future__ import annotations

import json
from typing import Any

from palaestrai.agent import (
    ActuatorInformation,
    DummyBrain,
    Filter,
    Muscle,
    RewardInformation,
    SensorInformation,
)
from palaestrai.environment import (
    Environment,
    EnvironmentState,
    EnvironmentStateTransformer,
    Reward,
)
from palaestrai.types import Box


class LevelEnvironment(Environment):
    """Sensor ``level``: the sum of the ``push`` set points so far; done after ``max_iter``
    steps. Its only reward is what the run file's ``reward:`` makes of the state."""

    def __init__(self, uid: str | None = None, broker_uri: str = "", seed: int = 0, **params: Any):
        super().__init__(uid, broker_uri, seed)
        self.max_iter = int(params.get("max_iter", 5))
        self.level = 0.0
        self.steps = 0

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.level, self.steps = 0.0, 0
        return [self._sensor()], [ActuatorInformation(0.0, Box(-5, 5, shape=()), "push")]

    def _sensor(self) -> SensorInformation:
        return SensorInformation(self.level, Box(-1000, 1000, shape=()), "level")

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        for actuator in actuators:
            self.level += float(actuator.value)
        self.steps += 1
        done = self.steps >= self.max_iter
        state = EnvironmentState([self._sensor()], [], done)
        state.rewards = [self.reward(state)] if self.reward is not None else []
        return state


class LevelReward(Reward):
    """The reward ``level_reward``: the state's ``level`` times the param ``scale``."""

    def __call__(self, *states: EnvironmentState) -> RewardInformation:
        level = float(states[-1].sensor_information[0].value)
        scale = float(self._parameters.get("scale", 1.0))
        return RewardInformation(level * scale, Box(-1e6, 1e6, shape=()), "level_reward")


class ScaleSensors(EnvironmentStateTransformer):
    """Multiplies every sensor value by the param ``factor``; fails unless the sensors carry
    the uids agents see (``<env uid>.<sensor>``)."""

    def __call__(self, environment_state: EnvironmentState) -> EnvironmentState:
        for sensor in environment_state.sensor_information:
            if "." not in str(sensor.uid):
                raise ValueError(f"sensor uid {sensor.uid!r} is not the agents' uid")
            sensor.value = sensor.value * float(self._params["factor"])
        return environment_state


class PushMuscle(Muscle):
    """Sets every actuator to the param ``push`` times the number of sensors it sees; sends
    the Brain its sensor values."""

    def __init__(self, push: float = 1.0, **params: Any) -> None:
        super().__init__()
        self.push = push

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        for actuator in actuators_available:
            actuator.value = self.push * len(sensors)
        return actuators_available, [float(s.value) for s in sensors]

    def update(self, update: Any) -> None:
        pass


class SeenUids(EnvironmentStateTransformer):
    """Passes the state through; keeps the sensor uids it was given (class attribute)."""

    seen: list[list[str]] = []

    def __call__(self, environment_state: EnvironmentState) -> EnvironmentState:
        SeenUids.seen.append([str(s.uid) for s in environment_state.sensor_information])
        return environment_state


class ReturnsATuple(EnvironmentStateTransformer):
    """Breaks the contract: returns a tuple instead of an EnvironmentState."""

    def __call__(self, environment_state: EnvironmentState) -> Any:
        return tuple(environment_state)


class Fails(EnvironmentStateTransformer):
    """Raises on every step."""

    def __call__(self, environment_state: EnvironmentState) -> EnvironmentState:
        raise RuntimeError("the transformer failed")


class AddToUpdate(Filter):
    """A user's filter, palaestrAI-style: adds the param ``add`` to each update of the Brain
    for its Muscle; fails at setup unless it was given the Brain and its sensors."""

    def __init__(self, add: int = 0) -> None:
        super().__init__()
        self.add = add

    def setup_brain(self) -> None:
        if self.brain is None or not self.brain.sensors:
            raise RuntimeError("setup_brain without the Brain's sensors")

    def brain_post_process(self, potential_update: Any) -> Any:
        return None if potential_update is None else potential_update + self.add


class UidsBrain(DummyBrain):
    """DummyBrain that also dumps the sensor uids it was told of and those of its memory's
    newest row (JSON ``{"sensors": [...], "memory": [...]}``)."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        newest = self.memory.tail(1).sensor_information
        self.memory_uids = [str(s.uid) for s in newest[-1]] if newest else []
        return super().thinking(muscle_id, data_from_muscle)

    def store(self) -> None:
        uids = {"sensors": [str(s.uid) for s in self.sensors], "memory": self.memory_uids}
        self.store_brain_dump(json.dumps(uids).encode())


class AddsASensor(Filter):
    """Shows the Muscle one more sensor but does not tell the Brain (no setup_brain)."""

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        extra = SensorInformation(0.0, Box(-1, 1, shape=()), "extra")
        return [*sensors, extra], actuators_available


class AddsASensorSaysNone(AddsASensor):
    """Has a setup_brain, which does not tell the Brain of the sensor it adds."""

    def setup_brain(self) -> None:
        pass
