"""DeltaStepFilter: the Muscle sets Box actuators as relative steps in [-1, 1]."""

from __future__ import annotations

from typing import Any

import numpy as np

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import fit_to_space
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.spaces import Box


class DeltaStepFilter(Filter):
    """The Muscle gets each Box actuator as a Box of its shape in [-1, 1] (value 0); its set
    point ``a`` becomes ``base + base * a``, clipped into the actuator's space, where
    ``base`` is the actuator's value as the Muscle would get it, or (palaestra hands actuators
    without values) the last set point this filter made (0 at first). Other actuators pass.
    """

    def __init__(self) -> None:
        super().__init__()
        self._originals: list[ActuatorInformation] = []
        self._last: dict[str, Any] = {}

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self._originals = actuators_available
        shown = []
        for actuator in actuators_available:
            space = actuator.space
            if isinstance(space, Box):
                unit = Box(
                    low=-np.ones_like(space.low), high=np.ones_like(space.high), dtype=space.dtype
                )
                actuator = ActuatorInformation(np.zeros_like(space.high), unit, actuator.uid)
            shown.append(actuator)
        return sensors, shown

    def muscle_post_process(
        self, setpoints: list[ActuatorInformation], data_for_brain: Any
    ) -> tuple[list[ActuatorInformation], Any]:
        if len(setpoints) != len(self._originals):
            raise ValueError(
                f"{len(setpoints)} set points for {len(self._originals)} actuators: "
                "muscle_pre_process must see the actuators first"
            )
        out = []
        for original, setpoint in zip(self._originals, setpoints, strict=True):
            space = original.space
            if isinstance(space, Box):
                uid = str(original.uid)
                base = original.value
                if base is None:
                    base = self._last.get(uid, fit_to_space(0.0, space))
                value = fit_to_space(base + base * np.asarray(setpoint.value), space)
                self._last[uid] = value
                setpoint = ActuatorInformation(value, space, original.uid)
            out.append(setpoint)
        return out, data_for_brain
