"""``palaestrai.environment.environment_baseline``: what an environment's start returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from palaestra.compat.palaestrai.types.simtime import SimTime
from palaestra.core.information import ActuatorInformation, SensorInformation

__all__ = ["EnvironmentBaseline"]


@dataclasses.dataclass
class EnvironmentBaseline:
    """palaestrAI's baseline: sensors, actuators, the start time and an optional world model.

    palaestra reads it as the pair ``(sensors_available, actuators_available)``: iterating
    gives those two.
    """

    sensors_available: list[SensorInformation]
    actuators_available: list[ActuatorInformation]
    simtime: SimTime = dataclasses.field(default_factory=lambda: SimTime(simtime_ticks=0))
    static_world_model: Any = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.sensors_available, self.actuators_available))
