"""palaestrAI's ``MemoryShard``: the rows :meth:`Memory.tail` returns, or one built by hand.

A shard from :meth:`~palaestra.agent.memory.Memory.tail` holds the memory's rows and builds
each field when it is first read (the tables need pandas). One built with palaestrAI's
constructor, ``MemoryShard(sensor_readings=..., ..., additional_data=...)``, holds the fields
it is given; :meth:`MemoryShard.concat` joins shards of either kind as palaestrAI's does.

The tables lay out values as palaestrAI's: a column per uid, and a value of k elements (a
``Box`` of shape (k,) or (2, k/2), ...) flattened over k consecutive rows of the table; every
value of one memory row should have as many elements (palaestrAI then fails with pandas'
"All arrays must be of the same length"; palaestra pads the shorter values with NaN). A uid
that repeats in a memory row (two environments of a phase that name a reward alike give a row
two ``r``) has each of its values' elements down its column, in the row's order, as
palaestrAI's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation

PANDAS_MISSING = (
    "Memory.tail()'s sensor_readings, actuator_setpoints and rewards are pandas DataFrames, "
    "as palaestrAI's: pip install 'palaestra[pandas]' (sensor_information, "
    "setpoint_information and reward_information give the information objects without pandas)"
)

_FIELDS = (
    "sensor_readings",
    "actuator_setpoints",
    "rewards",
    "dones",
    "observations",
    "actions",
    "objective",
    "additional_data",
    "terminated",
    "truncated",
    "decision_indices",
)
"""palaestrAI's fields, in its constructor's order."""


class MemoryShard:
    """The last rows of a memory, oldest first: palaestrAI's ``MemoryShard``.

    The arrays have one entry per memory row. The three tables are pandas DataFrames with a
    column per uid (see the module's docstring for values of several elements; a uid missing
    from a row is NaN there); they are built when first read, and need pandas.

    palaestrAI's constructor takes every field (``terminated``, ``truncated`` and
    ``decision_indices`` may be left out); a shard built so has no information objects
    (``sensor_information`` ... are empty), and its length is that of ``rewards``, as in
    palaestrAI.

    Attributes:
        sensor_readings: The sensor values the muscle acted on (DataFrame).
        actuator_setpoints: The set points it chose (DataFrame).
        rewards: The rewards that followed (DataFrame).
        objective: The objective value of each row, float64 (NaN where not computed).
        dones: Whether the row ended an episode, bool.
        terminated: Whether the episode ended in a terminal state, bool; None if a row does not
            say (palaestrAI's convention).
        truncated: Whether it was cut off, bool; None if a row does not say.
        observations: What muscles stored as their observations (stacked), NaN where none.
        actions: What muscles stored as their actions (stacked), NaN where none.
        additional_data: What muscles stored besides, per row (None where nothing).
        decision_indices: palaestrAI's action identities: None (palaestra records none), or
            what a shard built by hand was given.
        muscle_uids: Which muscle produced each row.
        sensor_information: The :class:`SensorInformation` objects of each row.
        setpoint_information: The :class:`ActuatorInformation` objects of each row.
        reward_information: The :class:`RewardInformation` objects of each row.
    """

    decision_indices: np.ndarray | None = None  # (a shard of a memory's rows: none)

    def __init__(
        self,
        sensor_readings: Any,
        actuator_setpoints: Any,
        rewards: Any,
        dones: np.ndarray,
        observations: np.ndarray,
        actions: np.ndarray,
        objective: np.ndarray,
        additional_data: list[Any],
        terminated: np.ndarray | None = None,
        truncated: np.ndarray | None = None,
        decision_indices: np.ndarray | None = None,
    ) -> None:
        given = locals()
        self._rows: Sequence[Any] = ()
        self._given = True
        for name in _FIELDS:  # the cached properties' values: they are not built
            self.__dict__[name] = given[name]

    @classmethod
    def of_rows(cls, rows: Sequence[Any]) -> MemoryShard:
        """A shard of a memory's rows (:meth:`Memory.tail`), each field built when read."""
        shard = cls.__new__(cls)
        shard._rows = rows
        shard._given = False
        return shard

    def __len__(self) -> int:
        return len(self.rewards) if self._given else len(self._rows)

    def __repr__(self) -> str:
        if self._given:
            return f"MemoryShard({len(self)} rows, built from its fields)"
        return f"MemoryShard({len(self._rows)} rows of {sorted(set(self.muscle_uids))})"

    @staticmethod
    def concat(memories: Sequence[MemoryShard]) -> MemoryShard:
        """The shards joined in order (palaestrAI's ``MemoryShard.concat``): tables one under
        the other (a new index), arrays and ``additional_data`` concatenated; ``terminated``,
        ``truncated`` and ``decision_indices`` only if every shard has them, else None.

        Shards of a memory's rows give a shard of all their rows. palaestrAI's stacks one row
        per shard of its ``observations`` and ``actions`` (``np.resize`` of each to the widest
        row); palaestra stacks every row, padding with NaN to the widest.
        """
        if all(not m._given for m in memories):
            return MemoryShard.of_rows([row for m in memories for row in m._rows])
        return _joined_fields(memories)

    @cached_property
    def muscle_uids(self) -> list[str]:
        return [row.muscle_uid for row in self._rows]

    @cached_property
    def objective(self) -> np.ndarray:
        return np.array(
            [np.nan if row.objective is None else row.objective for row in self._rows],
            dtype=np.float64,
        )

    @cached_property
    def dones(self) -> np.ndarray:
        return np.array([row.done for row in self._rows], dtype=bool)

    @cached_property
    def terminated(self) -> np.ndarray | None:
        return _flags([row.terminated for row in self._rows])

    @cached_property
    def truncated(self) -> np.ndarray | None:
        return _flags([row.truncated for row in self._rows])

    @cached_property
    def observations(self) -> np.ndarray:
        return _stacked([row.observations for row in self._rows])

    @cached_property
    def actions(self) -> np.ndarray:
        return _stacked([row.actions for row in self._rows])

    @cached_property
    def additional_data(self) -> list[Any]:
        return [row.additional_data for row in self._rows]

    @cached_property
    def sensor_information(self) -> list[Sequence[SensorInformation]]:
        return [row.sensors for row in self._rows]

    @cached_property
    def setpoint_information(self) -> list[Sequence[ActuatorInformation]]:
        return [row.setpoints for row in self._rows]

    @cached_property
    def reward_information(self) -> list[Sequence[RewardInformation]]:
        return [row.rewards for row in self._rows]

    @cached_property
    def sensor_readings(self) -> Any:
        return _frame(self.sensor_information)

    @cached_property
    def actuator_setpoints(self) -> Any:
        return _frame(self.setpoint_information)

    @cached_property
    def rewards(self) -> Any:
        return _frame(self.reward_information)


def _joined_fields(memories: Sequence[MemoryShard]) -> MemoryShard:
    """The fields of ``memories`` joined (see :meth:`MemoryShard.concat`)."""
    pd = _pandas()
    return MemoryShard(
        sensor_readings=_tables(pd, [m.sensor_readings for m in memories]),
        actuator_setpoints=_tables(pd, [m.actuator_setpoints for m in memories]),
        rewards=_tables(pd, [m.rewards for m in memories]),
        dones=_joined([m.dones for m in memories]),
        observations=_rows_of([m.observations for m in memories]),
        actions=_rows_of([m.actions for m in memories]),
        objective=_joined([m.objective for m in memories]),
        additional_data=list(itertools.chain.from_iterable(m.additional_data for m in memories)),
        terminated=_joined_if_all([m.terminated for m in memories]),
        truncated=_joined_if_all([m.truncated for m in memories]),
        decision_indices=_joined_if_all([m.decision_indices for m in memories]),
    )


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(PANDAS_MISSING) from e
    return pd


def _flags(values: list[bool | None]) -> np.ndarray | None:
    if any(v is None for v in values):
        return None
    return np.array(values, dtype=bool)


def _stacked(values: list[Any]) -> np.ndarray:
    if all(v is None for v in values):
        return np.full((len(values), 1), np.nan)
    arrays = [np.atleast_1d(np.asarray(np.nan if v is None else v)) for v in values]
    width = max(a.size for a in arrays)
    out = np.full((len(arrays), width), np.nan)
    for i, a in enumerate(arrays):
        flat = a.reshape(-1)
        try:
            out[i, : flat.size] = flat
        except (TypeError, ValueError):
            return np.array(values, dtype=object)
    return out


def _flat(value: Any) -> list[Any]:
    """A value's elements, in order, as palaestrAI lays them down a table's column."""
    if isinstance(value, np.ndarray | np.generic):
        return list(np.asarray(value).reshape(-1))
    if isinstance(value, list | tuple):
        array = np.asarray(value)
        if array.dtype != object:
            return list(array.reshape(-1))
    return [value]


def _frame(rows: list[Sequence[Any]]) -> Any:
    """A DataFrame of the information objects' values: a column per uid, each memory row
    giving as many table rows as its values have elements (NaN where a value has fewer, or
    the row lacks the uid); the values of a uid that repeats in a row are its elements one
    after the other."""
    pd = _pandas()
    if not rows:
        return pd.DataFrame()
    columns: dict[Any, list[Any]] = {}
    height = 0
    for infos in rows:
        flats: dict[Any, list[Any]] = {}
        for info in infos:  # (a uid may repeat, two environments' ``r``: each value, in order)
            flat = flats.get(info.uid)
            if flat is None:
                flats[info.uid] = _flat(info.value)
            else:
                flat.extend(_flat(info.value))
        size = max((len(flat) for flat in flats.values()), default=1)
        for uid, flat in flats.items():
            column = columns.get(uid)
            if column is None:
                column = columns[uid] = [None] * height
            column.extend(flat)
            column.extend([None] * (size - len(flat)))
        height += size
        for column in columns.values():  # uids this row lacks
            column.extend([None] * (height - len(column)))
    return pd.DataFrame(columns, index=range(height))


def _tables(pd: Any, tables: list[Any]) -> Any:
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.array([])


def _joined_if_all(arrays: list[np.ndarray | None]) -> np.ndarray | None:
    if any(a is None for a in arrays):
        return None
    return _joined([a for a in arrays if a is not None])


def _table(a: np.ndarray) -> np.ndarray:
    """An array as rows: a scalar one row, a 1-D array one row per element (palaestrAI's
    empty shard has ``np.array([])``: no row)."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(-1, 1)
    return a.reshape(a.shape[0], -1)


def _rows_of(arrays: list[np.ndarray]) -> np.ndarray:
    """The rows of 2-D arrays one under the other, padded with NaN to the widest."""
    if not arrays:
        return np.array([])
    tables = [_table(np.asarray(a)) for a in arrays]
    width = max(t.shape[1] for t in tables)
    out = np.full(
        (sum(t.shape[0] for t in tables), width), np.nan, dtype=np.result_type(*tables, np.float64)
    )
    start = 0
    for t in tables:
        out[start : start + t.shape[0], : t.shape[1]] = t
        start += t.shape[0]
    return out
