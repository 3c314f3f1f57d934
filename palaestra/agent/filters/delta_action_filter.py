"""DeltaActionFilter: the Muscle's set points are changes to the previous ones."""

from __future__ import annotations

from typing import Any

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import fit_to_space
from palaestra.core.information import ActuatorInformation, SensorInformation


class DeltaActionFilter(Filter):
    """Each set point the Muscle gives is added to the previous one (0 at first), clipped
    into the actuator's space; the sum goes to the environment and is the next base."""

    def __init__(self) -> None:
        super().__init__()
        self._previous: dict[str, Any] | None = None

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        if self._previous is None:
            self._previous = {str(a.uid): fit_to_space(0.0, a.space) for a in actuators_available}
        return sensors, actuators_available

    def muscle_post_process(
        self, setpoints: list[ActuatorInformation], data_for_brain: Any
    ) -> tuple[list[ActuatorInformation], Any]:
        previous = self._previous if self._previous is not None else {}
        for setpoint in setpoints:
            uid = str(setpoint.uid)
            if uid not in previous:
                raise KeyError(f"set point '{uid}' was not among the actuators available")
            setpoint.value = fit_to_space(previous[uid] + setpoint.value, setpoint.space)
            previous[uid] = setpoint.value
        return setpoints, data_for_brain
