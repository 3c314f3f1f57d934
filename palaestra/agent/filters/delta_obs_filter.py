"""DeltaObsFilter: the agent observes how its sensors changed since the last step."""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import fit_to_space
from palaestra.core.information import ActuatorInformation, SensorInformation

LOG = logging.getLogger(__name__)


class DeltaObsFilter(Filter):
    """A sensor ``DELTA-<uid>`` for each sensor (or each of ``delta_sensor_uids``): its value
    minus the value at the step before (0 at the first), clipped into the sensor's space.

    Args:
        delta_sensor_uids: The sensors to take deltas of; None for all.
        replace: Show only the deltas (True), or the sensors and then the deltas (False).
    """

    def __init__(
        self, *, delta_sensor_uids: Sequence[str] | None = None, replace: bool = True
    ) -> None:
        super().__init__()
        self.delta_sensor_uids = None if delta_sensor_uids is None else set(delta_sensor_uids)
        self.replace = replace
        self._last: dict[str, SensorInformation] = {}

    def _wanted(self, uid: str) -> bool:
        return self.delta_sensor_uids is None or uid in self.delta_sensor_uids

    def setup_brain(self) -> None:
        assert self.brain is not None
        sensors = list(self.brain.sensors)
        deltas = []
        for sensor in sensors:
            if self._wanted(str(sensor.uid)):
                delta = copy.deepcopy(sensor)
                delta.uid = f"DELTA-{sensor.uid}"
                deltas.append(delta)
        self.brain.sensors = deltas if self.replace else sensors + deltas

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        current = {str(s.uid): s for s in sensors}
        deltas = []
        for uid, sensor in current.items():
            if not self._wanted(uid):
                continue
            before = self._last.get(uid, sensor)
            delta = copy.deepcopy(sensor)
            delta.value = fit_to_space(sensor.value - before.value, sensor.space)
            delta.uid = f"DELTA-{uid}"
            deltas.append(delta)
        for uid in self._last.keys() - current.keys():
            LOG.error("DeltaObsFilter: sensor %s is missing from this step's sensors", uid)
        self._last = current
        return (deltas if self.replace else sensors + deltas), actuators_available
