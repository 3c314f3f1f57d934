"""ActionTimeShiftFilter: the agent also observes its own last set points."""

from __future__ import annotations

from collections import deque
from typing import Any

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import flat_values, set_flat_values
from palaestra.core.information import ActuatorInformation, SensorInformation


class ActionTimeShiftFilter(Filter):
    """Adds a sensor ``LAST-<i>-<actuator uid>`` for each actuator and each of the last
    ``steps`` set points (``i`` = 0 the oldest), 0 before there was one.

    Args:
        steps: How many past set points to show (its absolute value, at least 1).
    """

    def __init__(self, steps: int = 1) -> None:
        super().__init__()
        self.steps = max(1, abs(int(steps)))
        self._setpoints: deque[list[ActuatorInformation]] = deque(maxlen=self.steps)

    def setup_brain(self) -> None:
        assert self.brain is not None
        sensors, actuators = self.muscle_pre_process(
            list(self.brain.sensors), list(self.brain.actuators)
        )
        self.brain.sensors, self._setpoints = sensors, deque(maxlen=self.steps)

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        while len(self._setpoints) < self.steps:
            self._setpoints.append(actuators_available)
        shown = [
            SensorInformation(None, actuator.space, f"LAST-{i}-{actuator.uid}")
            for i, actuators in enumerate(self._setpoints)
            for actuator in actuators
        ]
        past = [actuator for actuators in self._setpoints for actuator in actuators]
        set_flat_values(flat_values(past), shown)
        return sensors + shown, actuators_available

    def muscle_post_process(
        self, setpoints: list[ActuatorInformation], data_for_brain: Any
    ) -> tuple[list[ActuatorInformation], Any]:
        self._setpoints.append(setpoints)
        return setpoints, data_for_brain
