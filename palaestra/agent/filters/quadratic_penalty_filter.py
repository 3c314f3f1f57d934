"""QuadraticPenaltyFilter: every sensor value becomes its squared distance from 1."""

from __future__ import annotations

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import flat_values, set_flat_values
from palaestra.core.information import ActuatorInformation, SensorInformation


class QuadraticPenaltyFilter(Filter):
    """The Muscle sees ``(1 - value) ** 2`` for every sensor value (clipped into its space)."""

    def setup(self) -> None:
        """Nothing to prepare."""

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        set_flat_values((1 - flat_values(sensors)) ** 2, sensors)
        return sensors, actuators_available
