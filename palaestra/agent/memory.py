"""An agent's memory of transitions: appended once per step, read by objectives and brains.

Rows live in a deque of small objects, and each muscle's rows also in a deque of their own, so
appending costs a few hundred nanoseconds and a muscle's rows are at hand
(:meth:`Memory.muscle_memory`). :meth:`Memory.tail` returns palaestrAI's shard: numpy arrays
(``objective``, ``dones``, ``terminated``, ``truncated``) built for the rows asked for, and
pandas DataFrames (``sensor_readings``, ``actuator_setpoints``, ``rewards``) built only when
read. A memory is bounded in rows (:attr:`Memory.size_limit`, which takes effect when set) and
in bytes: the size of a row is estimated on the first append and every
:data:`SIZE_SAMPLE_EVERY`-th after it (a row of large observations counts as what it is), and
the oldest rows go once either bound is passed.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, overload

import numpy as np

from palaestra.agent.lazy_rows import reward_values
from palaestra.agent.memory_shard import PANDAS_MISSING, MemoryShard
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation

__all__ = ["PANDAS_MISSING", "Memory", "MemoryShard", "MuscleMemory"]


_new = object.__new__


class Row:
    """A memory row: a transition of one muscle (palaestrAI's per-row fields)."""

    __slots__ = (
        "muscle_uid",
        "sensors",
        "setpoints",
        "rewards",
        "objective",
        "done",
        "terminated",
        "truncated",
        "observations",
        "actions",
        "additional_data",
    )

    def __init__(
        self,
        muscle_uid: str,
        sensors: Sequence[SensorInformation],
        setpoints: Sequence[ActuatorInformation],
        rewards: Sequence[RewardInformation],
        objective: float | None,
        done: bool,
    ) -> None:
        self.muscle_uid = muscle_uid
        self.sensors = sensors
        self.setpoints = setpoints
        self.rewards = rewards
        self.objective = objective
        self.done = done
        self.terminated: bool | None = None
        self.truncated: bool | None = None
        self.observations: Any = None
        self.actions: Any = None
        self.additional_data: Any = None


class Parts(Protocol):
    """What makes the sensors, set points and rewards of a :class:`MadeRow` from its source."""

    def __call__(self, source: Any) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
        """The row's sensors, set points and rewards, made of ``source``."""

    def reward_values(self, source: Any) -> tuple[Any, ...] | None:
        """The row's reward values while they are plain numbers, without making its parts
        (None: they must be made to be read)."""

    def size(self, source: Any) -> int | None:
        """The bytes ``source`` takes (None: the memory sizes it as values)."""


_PARTS = ("sensors", "setpoints", "rewards")
_MADE = frozenset(_PARTS)


class MadeRow(Row):
    """A row whose sensors, set points and rewards ``parts`` makes from ``source`` (what its
    transition carried: its encoded form in a Brain, its values in a Muscle) when one of
    them is first read (:attr:`made` from then on): a row whose parts are never read costs
    one object and its source. (An unset slot read raises AttributeError, which calls
    ``__getattr__``; the parts made are set, so the next read is a plain one.)"""

    __slots__ = ("parts", "source", "made")

    def __init__(
        self,
        muscle_uid: str,
        parts: Parts,
        source: Any,
        objective: float | None,
        done: bool,
        terminated: bool | None,
        truncated: bool | None,
    ) -> None:
        self.muscle_uid = muscle_uid
        self.parts = parts
        self.source = source
        self.objective = objective
        self.done = done
        self.terminated = terminated
        self.truncated = truncated
        self.observations = self.actions = self.additional_data = None
        self.made = False

    def __getattr__(self, name: str) -> Any:
        if name not in _MADE:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.make()
        return getattr(self, name)

    def make(self) -> None:
        """Make the parts (one set before, by :class:`MuscleMemory`'s columns, is kept)."""
        for name, part in zip(_PARTS, self.parts(self.source), strict=True):
            try:
                object.__getattribute__(self, name)
            except AttributeError:  # (not set yet)
                setattr(self, name, part)
        self.made = True


class _Field:
    """A :class:`MuscleMemory` attribute: the column of one field of its rows."""

    def __init__(self, field: str) -> None:
        self.field = field

    @overload
    def __get__(self, memory: None, owner: type[MuscleMemory]) -> _Field: ...

    @overload
    def __get__(self, memory: MuscleMemory, owner: type[MuscleMemory]) -> _Column: ...

    def __get__(self, memory: MuscleMemory | None, owner: type[MuscleMemory]) -> Any:
        return self if memory is None else _Column(memory._rows, self.field)


class MuscleMemory:
    """The rows of one muscle, oldest first: each attribute is a sequence with one entry per
    row (palaestrAI's per-muscle memory, ``memory._data[muscle_uid]``). ``objective`` entries
    can be set (``objective[-1] = value``); they read as floats (NaN where not computed)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: deque[Row]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    sensor_readings = _Field("sensors")
    actuator_setpoints = _Field("setpoints")
    rewards = _Field("rewards")
    objective = _Field("objective")
    dones = _Field("done")
    terminated = _Field("terminated")
    truncated = _Field("truncated")
    observations = _Field("observations")
    actions = _Field("actions")
    additional_data = _Field("additional_data")


class _Column(Sequence[Any]):
    """One field of a muscle's rows, as a sequence (a view: it follows the memory)."""

    __slots__ = ("_rows", "_field")

    def __init__(self, rows: deque[Row], field: str) -> None:
        self._rows = rows
        self._field = field

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._read(row) for row in list(self._rows)[index]]
        return self._read(self._rows[index])

    def __setitem__(self, index: int, value: Any) -> None:
        row = self._rows[index]
        if self._field == "objective":
            value = None if value is None else _scalar(value)
        elif type(row) is MadeRow and not row.made:  # (its other parts as they came)
            row.make()
        setattr(row, self._field, value)

    def __iter__(self) -> Iterator[Any]:
        return (self._read(row) for row in self._rows)

    def _read(self, row: Row) -> Any:
        value = getattr(row, self._field)
        if self._field == "objective" and value is None:
            return np.nan
        return value

    def __repr__(self) -> str:
        return repr(list(self))


class _MuscleMemories(Mapping[str, MuscleMemory]):
    """``memory._data``: each muscle's rows by its uid."""

    __slots__ = ("_muscles",)

    def __init__(self, muscles: dict[str, deque[Row]]) -> None:
        self._muscles = muscles

    def __getitem__(self, muscle_uid: str) -> MuscleMemory:
        return MuscleMemory(self._muscles[muscle_uid])

    def __iter__(self) -> Iterator[str]:
        return iter(self._muscles)

    def __len__(self) -> int:
        return len(self._muscles)


SIZE_SAMPLE_EVERY = 256
"""Appends between two estimates of a row's size in bytes."""
ROW_OVERHEAD = 480
"""Bytes a row costs besides its values (its objects, the deques' slots)."""


class Memory:
    """Transitions of an agent's muscles, newest last: at most :attr:`size_limit` rows and
    (about) ``byte_limit`` bytes of them (None: no byte bound).

    palaestra sets the limits of a Brain's and a Muscle's memory from the run file's
    ``brain_memory`` and ``muscle_memory`` (see
    :class:`~palaestra.core.description.specs.MemoryLimits`) before the plug-in's ``setup()``; a
    plug-in may set :attr:`size_limit` itself (palaestrAI's brains do), which takes effect at once.
    """

    def __init__(self, size_limit: int = 1_000_000, byte_limit: int | None = None) -> None:
        self._size_limit = size_limit
        self.byte_limit = byte_limit
        self._rows: deque[Row] = deque()
        self._muscles: dict[str, deque[Row]] = {}
        self._limit = size_limit
        self._appends = 0
        self._row_bytes = 0.0
        self._waiting: dict[str, dict[str, deque[Any]]] = {}
        """Per muscle, what :meth:`append` was given without rewards, until rows take it."""

    @property
    def size_limit(self) -> int:
        """The most rows kept; setting it drops the oldest rows beyond it at once."""
        return self._size_limit

    @size_limit.setter
    def size_limit(self, size_limit: int) -> None:
        self.set_limits(size_limit, self.byte_limit)

    def set_limits(self, size_limit: int | None = None, byte_limit: int | None = None) -> None:
        """Bound the memory to ``size_limit`` rows (None: keep the current bound) and
        ``byte_limit`` bytes (None: none); the oldest rows beyond them go at once.

        Raises:
            ValueError: ``size_limit`` is not a positive integer.
        """
        if size_limit is not None:
            if isinstance(size_limit, bool) or int(size_limit) != size_limit or size_limit < 1:
                raise ValueError(f"Memory size_limit must be an integer >= 1, got {size_limit!r}")
            self._size_limit = int(size_limit)
        self.byte_limit = byte_limit
        self._update_limit()
        self._evict()

    @property
    def row_bytes(self) -> float:
        """The estimated size of one row in bytes (0 before the first row)."""
        return self._row_bytes

    @property
    def tags(self) -> set[str]:
        """The uids of the muscles whose rows this memory holds (or held)."""
        return set(self._muscles)

    @property
    def _data(self) -> Mapping[str, MuscleMemory]:
        """Each muscle's rows by its uid: palaestrAI's name, which its brains read."""
        return _MuscleMemories(self._muscles)

    def muscle_memory(self, muscle_uid: str) -> MuscleMemory:
        """The rows of muscle ``muscle_uid`` (none if it has none)."""
        rows = self._muscles.get(muscle_uid)
        return MuscleMemory(rows if rows is not None else deque())

    def __len__(self) -> int:
        return len(self._rows)

    def append(
        self,
        muscle_uid: str,
        sensor_readings: Sequence[SensorInformation] | None = None,
        actuator_setpoints: Sequence[ActuatorInformation] | None = None,
        rewards: Sequence[RewardInformation] | None = None,
        done: bool | None = None,
        observations: Any = None,
        actions: Any = None,
        objective: Any = None,
        additional_data: Any = None,
        *,
        terminated: bool | None = None,
        truncated: bool | None = None,
    ) -> None:
        """Add what a muscle gave, as palaestrAI's memory pairs it: a row is made by a call that
        gives ``rewards``; what calls without them gave (readings, set points, ``done``, ...:
        palaestrAI's rollout worker appends a step's readings and set points before its
        rewards) waits for it, each value for the row of its count, so the first readings
        given belong to the first row. A call with none of the readings, set points and
        rewards sets the objective (if given) of ``muscle_uid``'s last row instead."""
        if sensor_readings is None and actuator_setpoints is None and rewards is None:
            last = self._muscles.get(muscle_uid)
            if objective is not None and last:
                last[-1].objective = _scalar(objective)
            return
        given = {
            "sensors": sensor_readings,
            "setpoints": actuator_setpoints,
            "done": done,
            "objective": None if objective is None else _scalar(objective),
            "terminated": terminated,
            "truncated": truncated,
            "observations": observations,
            "actions": actions,
            "additional_data": additional_data,
        }
        if rewards is None or muscle_uid in self._waiting:
            given = self._wait(muscle_uid, given, made=rewards is not None)
            if rewards is None:
                return
        row = Row(
            muscle_uid,
            given.get("sensors") or (),
            given.get("setpoints") or (),
            rewards,
            given.get("objective"),
            bool(given.get("done")),
        )
        row.terminated, row.truncated = given.get("terminated"), given.get("truncated")
        row.observations, row.actions = given.get("observations"), given.get("actions")
        row.additional_data = given.get("additional_data")
        self._add(row)

    def _wait(self, muscle_uid: str, given: dict[str, Any], made: bool) -> dict[str, Any]:
        """Queue what ``given`` holds behind what ``muscle_uid`` gave before without rewards;
        if a row is ``made``, what of it belongs to that row (each queue's oldest)."""
        waiting = self._waiting.setdefault(muscle_uid, {})
        for name, value in given.items():
            if value is not None:
                waiting.setdefault(name, deque(maxlen=self._limit)).append(value)
        if not made:
            return given
        taken = {name: queue.popleft() if queue else None for name, queue in waiting.items()}
        if not any(waiting.values()):
            del self._waiting[muscle_uid]
        return taken

    def add_values(
        self,
        muscle_uid: str,
        parts: Parts,
        source: Any,
        ends: tuple[bool, bool | None, bool | None],
    ) -> MadeRow:
        """Add the row of a transition the engine completed as what its parts are made of when
        first read (``source``, by ``parts``; ``ends``: its ``done``, ``terminated`` and
        ``truncated``). The row, whose ``objective`` may be set once it is known."""
        # (its slots set here, without a call of __init__: a row a game a step)
        row = _new(MadeRow)
        row.muscle_uid = muscle_uid
        row.parts = parts
        row.source = source
        row.made = False
        row.objective = None
        row.done = ends[0]
        row.terminated = ends[1]
        row.truncated = ends[2]
        row.observations = row.actions = row.additional_data = None
        self._add(row)
        return row

    def add_transition(
        self,
        muscle_uid: str,
        sensors: Sequence[SensorInformation],
        setpoints: Sequence[ActuatorInformation],
        rewards: Sequence[RewardInformation],
        ends: tuple[bool, bool | None, bool | None],
        objective: float | None = None,
    ) -> Row:
        """Add the row of a transition the engine completed (``ends``: its ``done``,
        ``terminated`` and ``truncated``): :meth:`append` without sorting out its arguments.
        The row, whose ``objective`` may be set once it is known."""
        row = _new(Row)  # (its slots set here, without a call of __init__: a row a game a step)
        row.muscle_uid = muscle_uid
        row.sensors = sensors
        row.setpoints = setpoints
        row.rewards = rewards
        row.objective = objective
        row.done = ends[0]
        row.terminated = ends[1]
        row.truncated = ends[2]
        row.observations = row.actions = row.additional_data = None
        self._add(row)
        return row

    def _add(self, row: Row) -> None:
        rows, muscles = self._rows, self._muscles
        rows.append(row)
        own = muscles.get(row.muscle_uid)
        if own is None:
            own = muscles[row.muscle_uid] = deque()
        own.append(row)
        if not self._appends % SIZE_SAMPLE_EVERY and self.byte_limit is not None:
            self._sample(row)
        self._appends += 1
        over = len(rows) - self._limit
        if over == 1:  # (a full memory: its oldest row goes, also its muscle's oldest)
            muscles[rows.popleft().muscle_uid].popleft()
        elif over > 1:
            self._evict()

    def _evict(self, keep: int | None = None) -> None:
        """Drop the oldest rows until at most ``keep`` (default: the bound) are left."""
        rows, muscles = self._rows, self._muscles
        keep = self._limit if keep is None else keep
        while len(rows) > keep:
            muscles[rows.popleft().muscle_uid].popleft()  # also the muscle's oldest

    def _sample(self, row: Row) -> None:
        """Update the estimate of a row's size with ``row`` (a moving average)."""
        if type(row) is MadeRow and not row.made:  # (sized as it is: not made to be)
            size = row.parts.size(row.source)
            size = ROW_OVERHEAD + (_size(row.source) if size is None else size)
        else:
            parts = (row.sensors, row.setpoints, row.rewards, row.observations, row.actions)
            size = ROW_OVERHEAD + sum(_size(part) for part in parts)
        self._row_bytes = size if not self._row_bytes else 0.75 * self._row_bytes + 0.25 * size
        self._update_limit()

    def _update_limit(self) -> None:
        limit = self._size_limit
        if self.byte_limit is not None and self._row_bytes:
            limit = min(limit, max(1, int(self.byte_limit // self._row_bytes)))
        self._limit = limit

    add_made = _add
    """Add a row made from what a message carried (see :class:`MadeRow`): :meth:`_add` itself,
    not a call of it (a Brain adds a row for each game each step)."""

    def tail(self, n: int = 1, include_only: Iterable[str] | None = None) -> MemoryShard:
        """The last ``n`` rows, oldest first (fewer if the memory holds fewer); with
        ``include_only``, the last ``n`` rows of those muscles."""
        n = max(0, n)
        if include_only is None:
            newest = list(islice(reversed(self._rows), n))
        else:
            wanted = {include_only} if isinstance(include_only, str) else set(include_only)
            newest = list(
                islice((row for row in reversed(self._rows) if row.muscle_uid in wanted), n)
            )
        newest.reverse()
        return MemoryShard.of_rows(newest)

    def latest_rewards(self) -> list[float]:
        """The reward values of the newest row as floats (NaN where not numeric), without
        building a :class:`MemoryShard`; empty if the memory is empty."""
        if not self._rows:
            return []
        row = self._rows[-1]
        # (numbers as they came: their objects, and a made row's parts, not built)
        if type(row) is MadeRow and not row.made:
            values = row.parts.reward_values(row.source)
        else:
            values = reward_values(row.rewards)
        if values is not None:
            return [float(values[0])] if len(values) == 1 else [float(v) for v in values]
        return [_float(reward.value) for reward in row.rewards]

    def truncate(self, n: int) -> None:
        """Keep only the last ``n`` rows (a negative ``n`` counts as ``-n``, as palaestrAI's)."""
        self._evict(abs(n))


_NUMBERS = (int, float, bool)
_ITEMS_SAMPLED = 16
"""Items of a list whose sizes are measured to estimate the rest's."""


def _size(value: Any) -> int:
    """The approximate size of ``value`` in bytes: numpy arrays by their buffer, sequences
    and mappings by a sample of their items, information objects by their value."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes) + 112
    if type(value) in _NUMBERS or value is None:
        return 32 if value is not None else 0
    if isinstance(value, str | bytes):
        return sys.getsizeof(value)
    if isinstance(value, Mapping):
        return sys.getsizeof(value) + sum(_size(v) for v in value.values())
    if isinstance(value, Sequence):
        return _sequence_size(value)
    inner = getattr(value, "value", None)  # an information object
    if inner is not None:
        return 64 + _size(inner)
    return sys.getsizeof(value)


def _sequence_size(value: Sequence[Any]) -> int:
    source = getattr(value, "source", None)  # a row built when read: size what it holds
    if source is not None:
        return _size(source)
    count = len(value)
    if not count:
        return 56
    sample = [value[i] for i in range(min(count, _ITEMS_SAMPLED))]
    return 56 + 8 * count + count * sum(_size(v) for v in sample) // len(sample)


def _scalar(value: Any) -> float:
    if type(value) in _NUMBERS:
        return float(value)
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _float(value: Any) -> float:
    if type(value) in _NUMBERS:
        return float(value)
    if type(value) is np.ndarray and value.size == 1 and value.dtype.kind in "fiu":
        return float(value.reshape(-1)[0])  # (the sum of its one value, without numpy's sum)
    try:
        return float(np.asarray(value, dtype=float).sum())
    except (TypeError, ValueError):
        return float("nan")
