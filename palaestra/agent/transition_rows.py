"""A Brain process's memory rows from the transitions its Muscles send: a row is one object,
:class:`~palaestra.agent.memory.MadeRow`, and its transition as it came (encoded, a view of
the message: :class:`~palaestra.core.wire.messages.KeptExperience`) until a plug-in first
reads one of its parts; then the transition is decoded and the parts made (see
:mod:`palaestra.agent.lazy_rows`: their information objects are built when first read)."""

from __future__ import annotations

import sys

import msgspec

from palaestra.agent.lazy_rows import Lazy, RewardRows, SensorRow, SetpointRow, ValueParts
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

    def add(self, memory: Memory, muscle_id: str, experience: m.KeptExperience) -> None:
        """Append the transition ``experience`` carries (of the Muscle ``muscle_id``) to
        ``memory`` as a row: its values left as they came (encoded) until a plug-in reads
        them."""
        memory.add_made(
            MadeRow(
                muscle_id,
                self.parts,
                experience.transition,
                experience.objective,
                experience.done,
                experience.terminated,
                experience.truncated,
            )
        )


class _Parts(ValueParts):
    """Makes a row's sensors, set points and rewards from the transition it came as (encoded:
    see :class:`~palaestra.agent.memory.MadeRow`), with the makers of the sensors it was added
    under."""

    __slots__ = ("rewards",)

    def __init__(
        self,
        sensor_row: SensorRow,
        sensor_count: int,
        setpoint_row: SetpointRow,
        rewards: RewardRows,
    ) -> None:
        super().__init__(sensor_row, sensor_count, setpoint_row)
        self.rewards = rewards

    def __call__(self, source: msgspec.Raw) -> tuple[Lazy, Lazy, Lazy]:  # type: ignore[override]
        transition = m.transition_of(source)
        return self.made(
            transition.sensors, transition.setpoints, *self.rewards.made(transition.rewards)
        )

    def reward_values(self, source: msgspec.Raw) -> None:  # type: ignore[override]
        """None: a row's rewards are read once its transition is decoded."""
        return None

    def size(self, source: msgspec.Raw) -> int:  # type: ignore[override]
        """The encoded transition: its view and the bytes it views."""
        return sys.getsizeof(source) + len(source)
