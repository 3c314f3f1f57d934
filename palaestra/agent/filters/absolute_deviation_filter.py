"""AbsoluteDeviationFilter: every sensor value becomes its distance from 1."""

from __future__ import annotations

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import flat_values, set_flat_values
from palaestra.core.information import ActuatorInformation, SensorInformation


class AbsoluteDeviationFilter(Filter):
    """The Muscle sees ``|1 - value|`` for every sensor value (clipped into its space)."""

    def setup(self) -> None:
        """Nothing to prepare."""

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        set_flat_values(abs(1 - flat_values(sensors)), sensors)
        return sensors, actuators_available
