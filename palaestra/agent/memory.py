"""An agent's memory of transitions: appended once per step, read by objectives and brains.

Rows live in a bounded deque of small tuples, so appending costs a few hundred nanoseconds;
:meth:`Memory.tail` builds numpy arrays only for the rows asked for.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
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


class Memory:
    """Transitions of one agent, newest last, at most ``size_limit`` of them."""

    def __init__(self, size_limit: int = 1_000_000) -> None:
        self.size_limit = size_limit
        self._rows: deque[_Row] = deque(maxlen=size_limit)

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
        self._rows.append(
            _Row(
                muscle_uid,
                sensor_readings or (),
                actuator_setpoints or (),
                rewards or (),
                None if objective is None else _scalar(objective),
                bool(done),
            )
        )

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
