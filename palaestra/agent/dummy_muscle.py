"""DummyMuscle: samples every actuator's space (seeded), or counts upwards on Discrete ones."""

from __future__ import annotations

from typing import Any

from palaestra.agent.muscle import Muscle
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.spaces import Discrete


class DummyMuscle(Muscle):
    """Acts at random (reproducibly: palaestra seeds the actuator spaces from the run seed).

    Args:
        count_upwards: Set Discrete actuators to the Brain's last answer modulo their size
            instead of sampling them.
    """

    def __init__(self, count_upwards: bool = False, **params: Any) -> None:
        self.count_upwards = count_upwards
        self.iter = -1

    def propose_actions(
        self,
        sensors: list[SensorInformation],
        actuators_available: list[ActuatorInformation],
    ) -> tuple[list[ActuatorInformation], Any]:
        for actuator in actuators_available:
            space = actuator.space
            if self.count_upwards and isinstance(space, Discrete):
                actuator(int(space.start + self.iter % space.n))
            elif space is not None:
                actuator(space.sample())
        return actuators_available, self.iter

    def update(self, update: Any) -> None:
        if update is not None:
            self.iter = update
