"""MergeStepsFilter: the agent observes its sensors' last few readings at once."""

from __future__ import annotations

import copy
from collections import deque

from palaestra.agent.filter import Filter
from palaestra.core.information import ActuatorInformation, SensorInformation


class MergeStepsFilter(Filter):
    """Each sensor is followed by its readings 1 to ``steps - 1`` steps before, as
    ``LAST-<lag>-<uid>`` (the first reading stands in for those before the first step).

    Args:
        steps: Readings per sensor, the current one included (its absolute value, >= 1).
        merge_actuators: Accepted for palaestrAI's run files; it changes nothing.
    """

    def __init__(self, steps: int = 3, *, merge_actuators: bool = False) -> None:
        super().__init__()
        self.steps = max(1, abs(int(steps)))
        self.merge_actuators = merge_actuators
        self._readings: deque[list[SensorInformation]] = deque(maxlen=self.steps)

    def setup_brain(self) -> None:
        assert self.brain is not None
        sensors, _ = self.muscle_pre_process(list(self.brain.sensors), [])
        self.brain.sensors = sensors
        self._readings.clear()

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self._readings.appendleft(sensors)
        while len(self._readings) < self.steps:
            self._readings.appendleft(sensors)
        merged = []
        for history in zip(*self._readings, strict=False):
            for lag, sensor in enumerate(history):
                reading = copy.deepcopy(sensor)
                if lag:
                    reading.uid = f"LAST-{lag}-{sensor.uid}"
                merged.append(reading)
        return merged, actuators_available
