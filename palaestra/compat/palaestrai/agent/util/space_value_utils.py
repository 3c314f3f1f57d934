"""``palaestrai.agent.util.space_value_utils``: fitting plain values into spaces."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.core.spaces import Box, Discrete, Space

LOG = logging.getLogger("palaestrai.agent.util.space_value_utils")

__all__ = [
    "assert_value_in_space",
    "check_value_is_none",
    "coerce_value_to_space",
    "coerce_values_to_space_shapes",
    "get_plain_list_of",
]


def _contains(space: Space, value: Any) -> bool:
    if isinstance(value, list):
        try:
            return space.contains(np.asarray(value))
        except ValueError:
            return space.contains(np.asarray(value, dtype=object))
    return space.contains(np.array(value, dtype=getattr(value, "dtype", type(value))))


def check_value_is_none(value: Any) -> bool:
    """Whether ``value`` is None (logged at debug level: a value should be set)."""
    if value is None:
        LOG.debug("an information object's value is None")
        return True
    return False


def assert_value_in_space(
    space: Space, value: Any, error: Exception | None = None, uid: str | None = None
) -> None:
    """Raise ``error`` (or a TypeError naming the value, the space and ``uid``) if ``value``
    is not None and not in ``space``."""
    if check_value_is_none(value) or _contains(space, value):
        return
    if error is not None:
        raise error
    where = f", for uid: {uid}" if uid is not None else ""
    raise TypeError(f'Value "{value}" not contained in space "{space}"{where}')


def get_plain_list_of(values: Sequence[Any]) -> list[Any]:
    """Numbers, lists and arrays of ``values`` as one flat list of plain Python numbers."""
    flat: list[Any] = []
    for value in values:
        if isinstance(value, int | float):
            flat.append(value)
        elif isinstance(value, np.ndarray | list):
            items = list(value) if np.ndim(value) > 0 else [value]
            flat.extend(item.item() if isinstance(item, np.ndarray) else item for item in items)
        else:
            raise TypeError(f"values must be ints, floats, lists or numpy arrays, got {value!r}")
    return list(np.array(flat).tolist())


def coerce_value_to_space(value: Any, space: Space) -> Any:
    """``value`` clipped into a Box and given its shape and dtype; a Discrete value as it is.
    Raises TypeError if the result is not in ``space``."""
    if isinstance(space, Box):
        clipped = np.clip(value, space.low, space.high)
        value = np.reshape(clipped, space.shape).astype(space.dtype)
    elif not isinstance(space, Discrete):
        raise NotImplementedError("Spaces other than Box and Discrete are currently not supported")
    assert_value_in_space(space, value)
    return value


def coerce_values_to_space_shapes(values: Any, spaces: Sequence[Space]) -> list[Any]:
    """Cut the flat ``values`` into consecutive pieces, one per space, each reshaped to its
    space's shape; values beyond the spaces' sizes are dropped. A scalar is given to every
    space as it is."""
    shaped: list[Any] = []
    start = 0
    for space in spaces:
        if np.isscalar(values):
            shaped.append(values)
            continue
        shape: tuple[int, ...] = getattr(space, "shape", ())
        size = int(np.prod(shape))
        shaped.append(np.reshape(values[start : start + size], shape))
        start += size
    return shaped
