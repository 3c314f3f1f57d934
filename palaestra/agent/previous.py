"""What a Muscle did last in a game: the step, what it saw and set, and the data it sent its
Brain, kept until the game's next step brings the rewards that complete the transition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from palaestra.agent.lazy_rows import ValueParts
from palaestra.core.information import ActuatorInformation, SensorInformation


class Previous(msgspec.Struct, frozen=True):
    """What the muscle did last: needed to complete the transition when rewards arrive. (A
    struct: one is made for each game each step, in a fraction of a class's time.)"""

    step: int
    sensors: Sequence[SensorInformation]  # (a Muscle on columns: none, see parts)
    setpoints: Sequence[ActuatorInformation]
    sensor_values: list[Any]
    setpoint_values: dict[str, Any]
    data: bytes | None  # what it sent its Brain, pickled (None: None)
    seen_values: list[Any]  # the sensor values the Muscle saw (its filters')
    stale: bool | None = None  # update_lag async: acted before an earlier step's answer came
    paused: bool = False  # recording was paused when it acted: the transition has no row
    # a Muscle on columns: what makes the sensor and set point objects of the transition's
    # memory row from its values, when the row is first read (None: the objects above)
    parts: ValueParts | None = None
