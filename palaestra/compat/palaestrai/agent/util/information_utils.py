"""``palaestrai.agent.util.information_utils``: flat vectors from and to information objects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from palaestra.compat.palaestrai.agent.util.space_value_utils import (
    coerce_value_to_space,
    coerce_values_to_space_shapes,
)
from palaestra.core.information import Information

__all__ = [
    "coerce_and_set_values_to_info_objects",
    "concat_flattened_act_scale_bias",
    "concat_flattened_values",
    "sort_info_objects_to_order",
]


def _flat(value: Any, space: Any) -> np.ndarray[Any, Any]:
    if getattr(space, "shape", ()):
        return np.asarray(value).flatten()
    return np.array([value])


def concat_flattened_values(information_classes: Sequence[Information]) -> np.ndarray[Any, Any]:
    """The values of ``information_classes``, each flattened, in one vector."""
    return np.concatenate([_flat(info.value, info.space) for info in information_classes])


def concat_flattened_act_scale_bias(
    actuator_informations: Sequence[Information], np_fun: Callable[..., Any]
) -> np.ndarray[Any, Any]:
    """Half of ``high - low`` (``np.subtract``: the scale) or of ``high + low`` (``np.add``:
    the bias) of each actuator's Box, flattened, in one vector."""
    if np_fun is not np.add and np_fun is not np.subtract:
        raise ValueError(f"np_fun must be numpy.add or numpy.subtract, got {np_fun!r}")
    parts = []
    for info in actuator_informations:
        space: Any = info.space
        parts.append(_flat(np_fun(space.high, space.low) / 2, space))
    return np.concatenate(parts)


def coerce_and_set_values_to_info_objects(
    values: Sequence[Any] | np.ndarray[Any, Any], info_objects: Sequence[Information]
) -> None:
    """Cut the flat ``values`` into the shapes of the objects' spaces, clip each into its
    space, and set it as the object's value."""
    spaces: list[Any] = [info.space for info in info_objects]
    shaped = coerce_values_to_space_shapes(values, spaces)
    for value, info, space in zip(shaped, info_objects, spaces, strict=False):
        info.value = coerce_value_to_space(value, space)


def sort_info_objects_to_order(
    info_objects_to_sort: Sequence[Information], sort_order_list: Sequence[Any]
) -> list[Information]:
    """``info_objects_to_sort`` in the order of the uids of ``sort_order_list`` (information
    objects or uid strings)."""
    if len(info_objects_to_sort) != len(sort_order_list):
        raise ValueError(
            f"cannot sort {len(info_objects_to_sort)} objects into an order of "
            f"{len(sort_order_list)}"
        )
    by_uid = {info.uid: info for info in info_objects_to_sort}
    return [by_uid[getattr(item, "uid", item)] for item in sort_order_list]
