"""The per-step value carriers: SensorInformation, ActuatorInformation, RewardInformation.

Each holds a value, the :class:`~palaestra.core.spaces.Space` it belongs to and the uid of the
sensor, actuator or reward. They are created on every step, so constructing one does no
validation and no copying; call :meth:`Information.contains` to check a value against its
space. :func:`json_value` gives a value in the plain form messages carry and the store writes;
:func:`to_strict_json` and :func:`from_strict_json` (from :mod:`palaestra.core.nonfinite`) carry
non-finite floats through JSON text.
"""

from __future__ import annotations

import copy as _copy
import warnings
from collections.abc import Sequence
from typing import Any, Self, TypeVar

import numpy as np

from palaestra.core.nonfinite import NON_FINITE as NON_FINITE
from palaestra.core.nonfinite import from_strict_json as from_strict_json
from palaestra.core.nonfinite import to_strict_json as to_strict_json
from palaestra.core.spaces import Space


class _Deprecated:
    """One of palaestrAI's deprecated names of an information attribute: reads and writes
    ``attr`` (the slot behind ``instead``) with a :class:`DeprecationWarning`."""

    __slots__ = ("attr", "instead", "name")

    def __init__(self, attr: str, instead: str) -> None:
        self.attr = attr
        self.instead = instead
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, info: Any, owner: type | None = None) -> Any:
        if info is None:
            return self
        _deprecated(info, self.name, self.instead)
        return getattr(info, self.attr)

    def __set__(self, info: Any, value: Any) -> None:
        _deprecated(info, self.name, self.instead)
        setattr(info, self.attr, value)


class _Alias:
    """Another name of an information slot, without a warning (see :class:`Information`)."""

    __slots__ = ("attr",)

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __get__(self, info: Any, owner: type | None = None) -> Any:
        return self if info is None else getattr(info, self.attr)

    def __set__(self, info: Any, value: Any) -> None:
        setattr(info, self.attr, value)


def _deprecated(info: Any, name: str, instead: str) -> None:
    warnings.warn(
        f"{type(info).__name__}.{name} is deprecated (as in palaestrAI): use {instead}",
        DeprecationWarning,
        stacklevel=3,
    )


class Information:
    """The shared base of the three information classes: a value, its space and a uid.

    Two objects are equal when they are of the same class and have equal uids, spaces and
    values (numpy arrays compare with ``numpy.array_equal``, lists and tuples item by item, so
    a tuple equals a list of equal items). They are mutable and therefore not hashable. Every
    object is truthy, even if its space has ``flat_dim == 0``.

    Args:
        value: The current value, usually a value of ``space``.
        space: The space of the value, if known.
        uid: The id of the sensor, actuator or reward, like ``"env.0"``.
    """

    __slots__ = ("value", "space", "uid", "value_ids")

    value: Any
    """The current value."""
    space: Space | None
    """The space of the value, or None if unknown."""
    uid: str | None
    """The id of the sensor, actuator or reward."""
    value_ids: Any
    """Names of the elements of a value of several (palaestrAI's ``value_ids``), or None."""

    def __init__(
        self, value: Any = None, space: Space | None = None, uid: str | None = None
    ) -> None:
        self.value = value
        self.space = space
        self.uid = uid
        self.value_ids: Any = None

    # (plain slots: read on every step, where properties cost a call each; the names the
    # slots had before, through which an object pickled then is read back)
    _value = _Alias("value")
    _space = _Alias("space")
    _uid = _Alias("uid")
    _value_ids = _Alias("value_ids")

    id = _Deprecated("uid", "uid")

    def contains(self) -> bool:
        """Return whether the value is in the space; False if no space is known."""
        return self.space is not None and self.space.contains(self.value)

    def copy(self) -> Self:
        """Return a new object with the same space and uid and a copy of the value.

        Numpy arrays, lists, tuples and dicts in the value are copied (recursively); the
        space is shared, as spaces are not changed after construction.
        """
        other = type(self)(_copy_value(self.value), self.space, self.uid)
        other.value_ids = _copy_value(self.value_ids)
        return other

    def __len__(self) -> int:
        """The length of the space (palaestrAI's: ``len(space)``), or 1 without a space."""
        return 1 if self.space is None else len(self.space)

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Information):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.uid == other.uid
            and self.space == other.space
            and _values_equal(self.value, other.value)
            and _values_equal(self.value_ids, other.value_ids)
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(value={self.value!r}, space={self.space!r}, uid={self.uid!r})"
        )


class SensorInformation(Information):
    """A sensor reading: the value an environment reports and an agent observes.

    palaestrAI's call syntax: ``SensorInformation(value, space, uid, value_ids)``, and its
    deprecated keywords ``sensor_value``, ``observation_space`` and ``sensor_id`` (used where
    ``value``, ``space`` or ``uid`` is not given). Calling the object returns the value.
    """

    __slots__ = ()

    def __init__(
        self,
        value: Any = None,
        space: Space | None = None,
        uid: str | None = None,
        value_ids: Any = None,
        sensor_value: Any = None,
        observation_space: Space | None = None,
        sensor_id: str | None = None,
    ) -> None:
        self.value = value if value is not None else sensor_value
        self.space = space if space is not None else observation_space
        self.uid = uid if uid is not None else sensor_id
        self.value_ids = value_ids

    def __call__(self, **kwargs: Any) -> Any:
        return self.value

    sensor_value = _Deprecated("value", "value")
    sensor_id = _Deprecated("uid", "uid")
    observation_space = _Deprecated("space", "space")


class ActuatorInformation(Information):
    """An actuator and its set point: the value an agent chooses and an environment applies.

    Calling the object sets the value, as muscles do with ``actuator(setpoint)``. palaestrAI's
    call syntax: ``ActuatorInformation(value, space, uid, value_ids)``, and its deprecated
    keywords ``setpoint``, ``action_space`` and ``actuator_id``.
    """

    __slots__ = ()

    def __init__(
        self,
        value: Any = None,
        space: Space | None = None,
        uid: str | None = None,
        value_ids: Any = None,
        setpoint: Any = None,
        action_space: Space | None = None,
        actuator_id: str | None = None,
    ) -> None:
        self.value = value if value is not None else setpoint
        self.space = space if space is not None else action_space
        self.uid = uid if uid is not None else actuator_id
        self.value_ids = value_ids

    def __call__(self, setpoint: Any) -> None:
        self.value = setpoint

    setpoint = _Deprecated("value", "value")
    actuator_id = _Deprecated("uid", "uid")
    action_space = _Deprecated("space", "space")


class RewardInformation(Information):
    """A reward an environment reports for the last step.

    palaestrAI's call syntax: ``RewardInformation(value, space, uid)``, and its deprecated
    keywords ``reward_value``, ``observation_space`` and ``reward_id``. Calling the object
    returns the value; ``reward + x`` is ``reward.value + x``.
    """

    __slots__ = ()

    def __init__(
        self,
        value: Any = None,
        space: Space | None = None,
        uid: str | None = None,
        reward_value: Any = None,
        observation_space: Space | None = None,
        reward_id: str | None = None,
    ) -> None:
        self.value = value if value is not None else reward_value
        self.space = space if space is not None else observation_space
        self.uid = uid if uid is not None else reward_id
        self.value_ids = None

    def __call__(self) -> Any:
        return self.value

    def __add__(self, other: Any) -> Any:
        return self.value + other

    reward_value = _Deprecated("value", "value")
    reward_id = _Deprecated("uid", "uid")
    observation_space = _Deprecated("space", "space")


def json_value(info: Information) -> Any:
    """Return the value of ``info`` as plain JSON-able Python.

    With a space, this is ``info.space.to_json_value(info.value)``; without one, numpy arrays
    become (nested) lists and numpy scalars Python scalars, also inside lists, tuples and dicts
    (tuples become lists). Other values are returned unchanged. Infinities and NaN stay floats
    (msgpack carries them); where the value becomes JSON text, :func:`to_strict_json` writes
    them as strings, which a space's ``from_json_value`` reads back as floats.
    """
    if info.space is not None:
        return info.space.to_json_value(info.value)
    return _plain(info.value)


_I = TypeVar("_I", bound=Information)


def rows_of(
    kind: type[_I],
    uids: Sequence[str],
    spaces: Sequence[Space | None],
    columns: Sequence[Sequence[Any]] | None,
    count: int,
) -> list[list[_I]]:
    """For each of ``count`` games, a list of new ``kind`` objects, one per uid: with its space
    and the game's value in its column (None without ``columns``). The same objects as
    ``kind(value, space, uid)``, made without a call of ``__init__`` each (a round makes one
    per game and sensor or actuator: this takes half the time)."""
    new = object.__new__
    pairs = list(zip(uids, spaces, strict=True))
    rows = []
    for k in range(count):
        row = []
        for i, (uid, space) in enumerate(pairs):
            made = new(kind)
            made.value = None if columns is None else columns[i][k]
            made.space = space
            made.uid = uid
            made.value_ids = None
            row.append(made)
        rows.append(row)
    return rows


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _copy_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) in (list, tuple):
        return type(value)(_copy_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    return _copy.copy(value)


def _values_equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.array_equal(a, b))
        except (TypeError, ValueError):
            return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_values_equal(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
