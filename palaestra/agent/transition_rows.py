"""A Brain process's memory rows from the transitions its Muscles send (see
:mod:`palaestra.agent.lazy_rows`: their information objects are built when first read, and a
row's sequences of them when one is first read: a row is one object,
:class:`~palaestra.agent.memory.MadeRow`, until then)."""

from __future__ import annotations

from typing import Any

from palaestra.agent.lazy_rows import Lazy, RewardRow, RewardRows, SensorRow, SetpointRow
from palaestra.agent.memory import MadeRow, Memory
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache


class TransitionRows:
    """A Brain process's memory rows from the transitions its Muscles send: the sensors,
    set points and rewards of each a :class:`Lazy` of what the message carried, built when a
    plug-in first reads them with the agent's ``sensors`` and ``actuators`` (built from its
    setup with ``spaces``, which builds the rewards' spaces too)."""

    __slots__ = ("spaces", "sensors", "actuator_spaces", "setpoint_row", "rewards", "parts")

    def __init__(
        self,
        spaces: SpaceCache,
        sensors: list[SensorInformation],
        actuators: list[ActuatorInformation],
    ) -> None:
        self.spaces = spaces
        self.actuator_spaces = {str(a.uid): a.space for a in actuators}
        self.setpoint_row = SetpointRow(self.actuator_spaces)
        self.rewards = RewardRows(spaces)
        self.use_sensors(sensors)

    def use_sensors(self, sensors: list[SensorInformation]) -> None:
        """The Brain's sensors (those the agent's filters make, once they are set up): what a
        row's sensor values are read as (the rows added before keep those they had)."""
        self.sensors = sensors
        self.parts = _Parts(SensorRow(sensors), len(sensors), self.setpoint_row, self.rewards)

    def add(self, memory: Memory, muscle_id: str, transition: m.Transition) -> None:
        """Append ``transition`` (of the Muscle ``muscle_id``) to ``memory`` as a row."""
        objective = transition.objective
        maker, values = self.rewards.made(transition.rewards)
        memory.add_made(
            MadeRow(
                muscle_id,
                self.parts,
                # (what the parts are made of: not the rewards' descriptions, kept once)
                (transition.sensors, transition.setpoints, maker, values),
                None if objective is None else float(objective),
                transition.done,
                transition.terminated,
                transition.truncated,
            )
        )


class _Parts:
    """Makes a row's sensors, set points and rewards from what its transition carried (see
    :class:`~palaestra.agent.memory.MadeRow`), with the makers of the sensors it was added
    under."""

    __slots__ = ("sensor_row", "sensor_count", "setpoint_row", "rewards")

    def __init__(
        self,
        sensor_row: SensorRow,
        sensor_count: int,
        setpoint_row: SetpointRow,
        rewards: RewardRows,
    ) -> None:
        self.sensor_row = sensor_row
        self.sensor_count = sensor_count
        self.setpoint_row = setpoint_row
        self.rewards = rewards

    def __call__(self, part: str, source: _Source) -> Lazy:
        sensors, setpoints, rewards, values = source
        if part == "sensors":
            return Lazy(self.sensor_row, min(self.sensor_count, len(sensors)), sensors)
        if part == "setpoints":
            return Lazy(self.setpoint_row, len(setpoints), setpoints)
        return Lazy(rewards, len(values), values)


_Source = tuple[list[Any], dict[str, Any], RewardRow, tuple[Any, ...]]
"""What a row's parts are made of: the transition's sensor values and set points, its rewards'
maker (by their descriptions) and values."""
