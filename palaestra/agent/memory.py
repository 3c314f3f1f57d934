"""An agent's memory of transitions: appended once per step, read by objectives and brains.

Rows live in a bounded deque of small objects, so appending costs a few hundred nanoseconds;
:meth:`Memory.tail` builds numpy arrays only for the rows asked for. A memory is bounded in rows
and in bytes: the size of a row is estimated on the first append and every
:data:`SIZE_SAMPLE_EVERY`-th after it (a row of large observations counts as what it is), and
the oldest rows go once either bound is passed.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation


@dataclass(frozen=True)
class MemoryShard:
    """The last rows of a memory, oldest first.

    Attributes:
        muscle_uids: Which muscle produced each row.
        sensor_readings: The sensor readings the muscle acted on, per row.
        actuator_setpoints: The set points it chose, per row.
        rewards: Reward values, shape ``(rows, rewards)`` (floats; NaN where missing).
        reward_uids: The column names of ``rewards``.
        objective: The objective value of each row (NaN where not yet computed).
        done: Whether the row ended an episode.
    """

    muscle_uids: list[str]
    sensor_readings: list[Sequence[SensorInformation]]
    actuator_setpoints: list[Sequence[ActuatorInformation]]
    rewards: np.ndarray
    reward_uids: list[str]
    objective: np.ndarray
    done: np.ndarray

    def __len__(self) -> int:
        return len(self.muscle_uids)


class _Row:
    __slots__ = ("muscle_uid", "sensors", "setpoints", "rewards", "objective", "done")

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


SIZE_SAMPLE_EVERY = 256
"""Appends between two estimates of a row's size in bytes."""
ROW_OVERHEAD = 400
"""Bytes a row costs besides its values (its objects, the deque's slot)."""


class Memory:
    """Transitions of one agent, newest last: at most ``size_limit`` rows and (about)
    ``byte_limit`` bytes of them (None: no byte bound).

    palaestra sets the limits of a Brain's and a Muscle's memory from the run file's
    ``brain_memory`` and ``muscle_memory`` (see :class:`~palaestra.core.specs.MemoryLimits`).
    """

    def __init__(self, size_limit: int = 1_000_000, byte_limit: int | None = None) -> None:
        self.size_limit = size_limit
        self.byte_limit = byte_limit
        self._rows: deque[_Row] = deque(maxlen=size_limit)
        self._limit = size_limit
        self._appends = 0
        self._row_bytes = 0.0

    def set_limits(self, size_limit: int | None = None, byte_limit: int | None = None) -> None:
        """Bound the memory to ``size_limit`` rows (None: keep the current bound) and
        ``byte_limit`` bytes (None: none); the oldest rows beyond them go at once."""
        if size_limit is not None and size_limit != self.size_limit:
            self.size_limit = size_limit
            self._rows = deque(self._rows, maxlen=size_limit)
        self.byte_limit = byte_limit
        self._update_limit()

    @property
    def row_bytes(self) -> float:
        """The estimated size of one row in bytes (0 before the first row)."""
        return self._row_bytes

    def __len__(self) -> int:
        return len(self._rows)

    def append(
        self,
        muscle_uid: str,
        sensor_readings: Sequence[SensorInformation] | None = None,
        actuator_setpoints: Sequence[ActuatorInformation] | None = None,
        rewards: Sequence[RewardInformation] | None = None,
        done: bool | None = None,
        objective: Any = None,
    ) -> None:
        """Add a row; a call with only ``objective`` sets the objective of the last row."""
        if sensor_readings is None and actuator_setpoints is None and rewards is None:
            if objective is not None and self._rows:
                self._rows[-1].objective = _scalar(objective)
            return
        row = _Row(
            muscle_uid,
            sensor_readings or (),
            actuator_setpoints or (),
            rewards or (),
            None if objective is None else _scalar(objective),
            bool(done),
        )
        rows = self._rows
        rows.append(row)
        if not self._appends % SIZE_SAMPLE_EVERY and self.byte_limit is not None:
            self._sample(row)
        self._appends += 1
        while len(rows) > self._limit:
            rows.popleft()

    def _sample(self, row: _Row) -> None:
        """Update the estimate of a row's size with ``row`` (a moving average)."""
        size = ROW_OVERHEAD + sum(
            _size(part) for part in (row.sensors, row.setpoints, row.rewards)
        )
        self._row_bytes = size if not self._row_bytes else 0.75 * self._row_bytes + 0.25 * size
        self._update_limit()

    def _update_limit(self) -> None:
        limit = self.size_limit
        if self.byte_limit is not None and self._row_bytes:
            limit = min(limit, max(1, int(self.byte_limit // self._row_bytes)))
        self._limit = limit

    def tail(self, n: int = 1) -> MemoryShard:
        """The last ``n`` rows (fewer if the memory holds fewer)."""
        n = max(0, min(n, len(self._rows)))
        rows = [self._rows[i] for i in range(len(self._rows) - n, len(self._rows))]
        reward_uids: list[str] = []
        for row in rows:
            for reward in row.rewards:
                if str(reward.uid) not in reward_uids:
                    reward_uids.append(str(reward.uid))
        column = {uid: i for i, uid in enumerate(reward_uids)}
        rewards = np.full((len(rows), len(reward_uids)), np.nan)
        for r, row in enumerate(rows):
            for reward in row.rewards:
                rewards[r, column[str(reward.uid)]] = _float(reward.value)
        return MemoryShard(
            muscle_uids=[row.muscle_uid for row in rows],
            sensor_readings=[row.sensors for row in rows],
            actuator_setpoints=[row.setpoints for row in rows],
            rewards=rewards,
            reward_uids=reward_uids,
            objective=np.array(
                [np.nan if row.objective is None else row.objective for row in rows]
            ),
            done=np.array([row.done for row in rows], dtype=bool),
        )

    def latest_rewards(self) -> list[float]:
        """The reward values of the newest row as floats (NaN where not numeric), without
        building a :class:`MemoryShard`; empty if the memory is empty."""
        if not self._rows:
            return []
        return [_float(reward.value) for reward in self._rows[-1].rewards]

    def truncate(self, n: int) -> None:
        """Keep only the last ``n`` rows."""
        while len(self._rows) > n:
            self._rows.popleft()


_NUMBERS = (int, float, bool)
_ITEMS_SAMPLED = 16
"""Items of a list whose sizes are measured to estimate the rest's."""


def _size(value: Any) -> int:
    """The approximate size of ``value`` in bytes: numpy arrays by their buffer, sequences
    and mappings by a sample of their items, information objects by their value."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes) + 112
    if type(value) in _NUMBERS or value is None:
        return 32
    if isinstance(value, str | bytes):
        return sys.getsizeof(value)
    if isinstance(value, Mapping):
        return sys.getsizeof(value) + sum(_size(v) for v in value.values())
    if isinstance(value, Sequence):
        source = getattr(value, "source", None)  # a row built when read: size what it holds
        if source is not None:
            return _size(source)
        count = len(value)
        if not count:
            return 56
        sample = [value[i] for i in range(min(count, _ITEMS_SAMPLED))]
        return 56 + 8 * count + count * sum(_size(v) for v in sample) // len(sample)
    inner = getattr(value, "value", None)  # an information object
    if inner is not None:
        return 64 + _size(inner)
    return sys.getsizeof(value)


def _scalar(value: Any) -> float:
    if type(value) in _NUMBERS:
        return float(value)
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _float(value: Any) -> float:
    if type(value) in _NUMBERS:
        return float(value)
    try:
        return float(np.asarray(value, dtype=float).sum())
    except (TypeError, ValueError):
        return float("nan")
