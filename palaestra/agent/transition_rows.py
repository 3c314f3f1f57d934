"""A Brain process's memory rows from the transitions its Muscles send (see
:mod:`palaestra.agent.lazy_rows`: their information objects are built when first read)."""

from __future__ import annotations

from palaestra.agent.lazy_rows import Lazy, RewardRows, SensorRow, SetpointRow
from palaestra.agent.memory import Memory
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache


class TransitionRows:
    """A Brain process's memory rows from the transitions its Muscles send: the sensors,
    set points and rewards of each a :class:`Lazy` of what the message carried, built when a
    plug-in first reads them with the agent's ``sensors`` and ``actuators`` (built from its
    setup with ``spaces``, which builds the rewards' spaces too)."""

    __slots__ = ("spaces", "sensors", "actuator_spaces", "sensor_row", "setpoint_row", "rewards")

    def __init__(
        self,
        spaces: SpaceCache,
        sensors: list[SensorInformation],
        actuators: list[ActuatorInformation],
    ) -> None:
        self.spaces = spaces
        self.use_sensors(sensors)
        self.actuator_spaces = {str(a.uid): a.space for a in actuators}
        self.setpoint_row = SetpointRow(self.actuator_spaces)
        self.rewards = RewardRows(spaces)

    def use_sensors(self, sensors: list[SensorInformation]) -> None:
        """The Brain's sensors (those the agent's filters make, once they are set up): what a
        row's sensor values are read as."""
        self.sensors = sensors
        self.sensor_row = SensorRow(sensors)

    def add(self, memory: Memory, muscle_id: str, transition: m.Transition) -> None:
        """Append ``transition`` (of the Muscle ``muscle_id``) to ``memory`` as a row."""
        sensors, setpoints = transition.sensors, transition.setpoints
        objective = transition.objective
        memory.add_transition(
            muscle_id,
            Lazy(self.sensor_row, min(len(self.sensors), len(sensors)), sensors),
            Lazy(self.setpoint_row, len(setpoints), setpoints),
            self.rewards(transition.rewards),
            (transition.done, transition.terminated, transition.truncated),
            None if objective is None else float(objective),
        )
