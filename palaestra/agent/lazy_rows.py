"""Information objects of a memory row, built when first read.

A Brain's memory keeps up to ``brain_memory.rows`` transitions (100,000 unless the run file
says otherwise) and each game of a Muscle its own; a row holds the sensor readings, set points
and rewards of a step as :class:`~palaestra.core.information.Information` objects. Built when a
transition comes, they cost each step their construction and, while the memory fills, the
garbage collector's scans of every object a row holds (it scans each as it passes through its
generations). Here a row's readings are a :class:`Lazy` of what the message carried (its JSON
values) and the process's maker for them, built when a plug-in first reads the row: a Brain
that learns from arrays, or not at all, never pays for them, and a row is a few objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache

_new = object.__new__


class Lazy(Sequence[Any]):
    """The information objects ``make`` builds from ``source`` (a row's values), built when
    first read. ``make`` is shared by the rows it suits (one per process and kind): a row holds
    no closure of its own."""

    __slots__ = ("make", "_size", "_built", "source")

    def __init__(self, make: Callable[[Any], list[Any]], size: int, source: Any) -> None:
        self.make = make
        self._size = size
        self.source = source  # what it is built from: the memory sizes a row by it
        self._built: list[Any] | None = None

    def _items(self) -> list[Any]:
        built = self._built
        if built is None:
            built = self._built = self.make(self.source)
        return built

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._items())


class SensorRow:
    """A row's sensor objects from its values (in the order of ``sensors``)."""

    __slots__ = ("sensors",)

    def __init__(self, sensors: list[SensorInformation]) -> None:
        self.sensors = sensors

    def __call__(self, values: list[Any]) -> list[SensorInformation]:
        return [
            SensorInformation(native(t.space, v), t.space, t.uid)
            for t, v in zip(self.sensors, values, strict=False)
        ]


class SetpointRow:
    """A row's set point objects from its values by actuator uid."""

    __slots__ = ("spaces",)

    def __init__(self, spaces: dict[str, Any]) -> None:
        self.spaces = spaces

    def __call__(self, values: dict[str, Any]) -> list[ActuatorInformation]:
        spaces = self.spaces
        return [
            ActuatorInformation(native(spaces.get(uid), v), spaces.get(uid), uid)
            for uid, v in values.items()
        ]


def lazy(make: Callable[[Any], list[Any]], size: int, source: Any) -> Lazy:
    """``Lazy(make, size, source)``, made without a call of ``__init__`` (a Muscle on columns
    makes two a game a step)."""
    made = _new(Lazy)
    made.make = make
    made._size = size
    made.source = source
    made._built = None
    return made


class RewardRow:
    """A row's reward objects from its values (a tuple), for rewards of these uids and spaces
    (as their message described them)."""

    __slots__ = ("uids", "descriptions", "spaces")

    def __init__(self, rewards: list[m.InfoDesc], spaces: SpaceCache) -> None:
        self.uids = [r.uid for r in rewards]
        self.descriptions = [r.space for r in rewards]
        self.spaces = [spaces.space(r.uid, r.space) for r in rewards]

    def fits(self, rewards: list[m.InfoDesc]) -> bool:
        """Whether ``rewards`` have this row's uids and spaces, in its order."""
        uids, descriptions = self.uids, self.descriptions
        if len(rewards) != len(uids):
            return False
        for k, reward in enumerate(rewards):
            if reward.uid != uids[k] or reward.space != descriptions[k]:
                return False
        return True

    def __call__(self, values: tuple[Any, ...]) -> list[RewardInformation]:
        return [
            RewardInformation(native(space, v), space, uid)
            for uid, space, v in zip(self.uids, self.spaces, values, strict=True)
        ]


class RewardRows:
    """Makes rows' rewards, built when read, from their descriptions in a message (the maker
    of the last rewards' uids and spaces serves while they stay the same)."""

    __slots__ = ("spaces", "make")

    def __init__(self, spaces: SpaceCache) -> None:
        self.spaces = spaces
        self.make = RewardRow([], spaces)

    def __call__(self, rewards: list[m.InfoDesc]) -> Lazy:
        make, values = self.made(rewards)
        return lazy(make, len(rewards), values)

    def made(self, rewards: list[m.InfoDesc]) -> tuple[RewardRow, tuple[Any, ...]]:
        """The maker of rewards described as ``rewards`` are (the last one, while it fits),
        and their values, as a row keeps them."""
        make = self.make
        if len(rewards) == 1 and len(make.uids) == 1:  # (one reward: what most environments give)
            reward = rewards[0]
            if reward.uid == make.uids[0] and reward.space == make.descriptions[0]:
                return make, (reward.value,)
        if not make.fits(rewards):  # (other rewards, or other spaces, than the last row's)
            make = self.make = RewardRow(rewards, self.spaces)
        return make, tuple([r.value for r in rewards])


def reward_values(rewards: Sequence[RewardInformation]) -> tuple[Any, ...] | None:
    """The values of a row's rewards as their message carried them, while they are plain
    numbers and no plug-in has read the row (it may have changed the objects it got); else
    None, and the objects are what counts."""
    if type(rewards) is not Lazy or type(rewards.make) is not RewardRow:
        return None
    if rewards._built is not None:
        return None
    return plain(rewards.source)


def plain(values: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``values`` if each is a plain number (an int or a float), else None."""
    for value in values:  # (a loop: a round asks it of each game's row)
        if type(value) not in _PLAIN:
            return None
    return values


class ValueParts:
    """Makes the sensors, set points and rewards of a row kept as the values its transition
    carried (a :class:`~palaestra.agent.memory.MadeRow` whose source is its sensor values,
    its set points by actuator uid, its rewards' maker and their values), each a :class:`Lazy`
    with the makers of when the row came."""

    __slots__ = ("sensor_row", "sensor_count", "setpoint_row")

    def __init__(
        self, sensor_row: SensorRow, sensor_count: int, setpoint_row: SetpointRow
    ) -> None:
        self.sensor_row = sensor_row
        self.sensor_count = sensor_count
        self.setpoint_row = setpoint_row

    def __call__(self, source: Values) -> tuple[Lazy, Lazy, Lazy]:
        return self.made(*source)

    def made(
        self,
        sensors: list[Any],
        setpoints: dict[str, Any],
        rewards: RewardRow,
        values: tuple[Any, ...],
    ) -> tuple[Lazy, Lazy, Lazy]:
        """The parts of a row of these values."""
        return (
            lazy(self.sensor_row, min(self.sensor_count, len(sensors)), sensors),
            lazy(self.setpoint_row, len(setpoints), setpoints),
            lazy(rewards, len(values), values),
        )

    def reward_values(self, source: Values) -> tuple[Any, ...] | None:
        """The row's reward values while they are plain numbers (see :func:`reward_values`)."""
        return plain(source[3])

    def size(self, source: Values) -> int | None:
        """None: the memory sizes the row by its values."""
        return None


Values = tuple[list[Any], dict[str, Any], RewardRow, tuple[Any, ...]]
"""What a row kept as its values is made of (see :class:`ValueParts`)."""


_PLAIN = (int, float)
"""The types of values whose float is that of the object built from them (a bool is not one)."""


def native(space: Any, value: Any) -> Any:
    """``value`` as its ``space`` reads a JSON value (as it is without a space)."""
    return space.from_json_value(value) if space is not None else value
