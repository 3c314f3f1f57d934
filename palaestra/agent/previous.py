"""What a Muscle did last in a game: the step, what it saw and set, and the data it sent its
Brain, kept until the game's next step brings the rewards that complete the transition."""

from __future__ import annotations

from typing import Any

from palaestra.core.information import ActuatorInformation, SensorInformation


class Previous:
    """What the muscle did last: needed to complete the transition when rewards arrive."""

    __slots__ = (
        "step",
        "sensors",
        "setpoints",
        "sensor_values",
        "setpoint_values",
        "data",
        "seen_values",
        "stale",
        "paused",
    )

    def __init__(
        self,
        step: int,
        sensors: list[SensorInformation],
        setpoints: list[ActuatorInformation],
        sensor_values: list[Any],
        setpoint_values: dict[str, Any],
        data: bytes,
        seen_values: list[Any],
        stale: bool | None = None,
        paused: bool = False,
    ) -> None:
        self.step = step
        self.sensors = sensors
        self.setpoints = setpoints
        self.sensor_values = sensor_values
        self.setpoint_values = setpoint_values
        self.data = data
        self.seen_values = seen_values  # the sensor values the Muscle saw (its filters')
        self.stale = stale  # update_lag async: acted before an earlier step's answer came
        self.paused = paused  # recording was paused when it acted: the transition has no row
