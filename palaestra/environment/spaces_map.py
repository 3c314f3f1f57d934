"""gymnasium spaces as palaestra sensors and actuators, and values back and forth.

A gymnasium observation (or action) space becomes one or more palaestra *leaves*, each a
sensor (or actuator) with a uid and a palaestra space:

* ``Box``, ``Discrete``, ``MultiDiscrete`` (start 0) and ``MultiBinary`` are one leaf named
  after the base uid: ``obs`` (``action``);
* ``Dict`` splits into one leaf per key, ``obs.<key>``; ``Tuple`` into one per position,
  ``obs.<index>``; nested ones nest the names (``obs.<key>.<index>``), so a run file can
  give an agent part of an observation;
* ``Graph``, ``Text``, ``Sequence``, ``OneOf`` and any other space have no palaestra
  counterpart: :class:`UnmappableSpaceError` (exit code 2) names the space and the uid.

:func:`leaves` maps a space; :func:`split` cuts a gymnasium value into the leaves' values;
:func:`join` puts the leaves' values back together as the gymnasium value (a ``dict``,
``tuple`` or the single value).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from palaestra.core.errors import InvalidInputError
from palaestra.core.information import Information
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space

InfoT = TypeVar("InfoT", bound=Information)


class UnmappableSpaceError(InvalidInputError):
    """A gymnasium space palaestra cannot express as sensors or actuators (exit code 2)."""


@dataclass(frozen=True)
class Leaf:
    """One sensor or actuator cut from a gymnasium space.

    Attributes:
        uid: The sensor's or actuator's uid (``obs``, ``obs.position``, ``action.1``).
        space: Its palaestra space.
        path: The keys and indices that lead from the whole value to this leaf.
        discrete: Whether values are plain ints (a Discrete leaf).
    """

    uid: str
    space: Space
    path: tuple[str | int, ...]
    discrete: bool


def leaves(space: Any, base: str, owner: str = "") -> list[Leaf]:
    """The leaves of gymnasium ``space``, named from ``base`` (``obs`` or ``action``).

    Args:
        space: A gymnasium space.
        base: The uid of the whole space.
        owner: Who declares it, for messages (``"environment 'cartpole' (CartPole-v1)"``).

    Raises:
        UnmappableSpaceError: The space, or a part of it, has no palaestra counterpart.
    """
    found: list[Leaf] = []
    _collect(space, base, (), found, owner)
    return found


def _collect(
    space: Any, uid: str, path: tuple[str | int, ...], found: list[Leaf], owner: str
) -> None:
    from gymnasium import spaces as gs

    if isinstance(space, gs.Dict):
        for key, sub in space.spaces.items():
            _collect(sub, f"{uid}.{key}", (*path, str(key)), found, owner)
    elif isinstance(space, gs.Tuple):
        for index, sub in enumerate(space.spaces):
            _collect(sub, f"{uid}.{index}", (*path, index), found, owner)
    else:
        found.append(
            Leaf(uid, _leaf_space(space, uid, owner), path, isinstance(space, gs.Discrete))
        )


def _leaf_space(space: Any, uid: str, owner: str) -> Space:
    from gymnasium import spaces as gs

    where = f"{owner}: " if owner else ""
    if isinstance(space, gs.Discrete):
        return Discrete(int(space.n), start=int(space.start))
    if isinstance(space, gs.Box):
        return Box(space.low, space.high, shape=space.shape, dtype=space.dtype)
    if isinstance(space, gs.MultiDiscrete):
        if np.any(np.asarray(space.start) != 0):
            raise UnmappableSpaceError(
                f"{where}'{uid}' is a {space!r} with a start other than 0, which palaestra "
                "cannot map; supported: MultiDiscrete starting at 0"
            )
        return MultiDiscrete(space.nvec)
    if isinstance(space, gs.MultiBinary):
        return MultiBinary(tuple(space.shape))
    raise UnmappableSpaceError(
        f"{where}'{uid}' is a {type(space).__name__} space ({space!r}), which palaestra cannot "
        "map to a sensor or actuator; supported: Box, Discrete, MultiDiscrete, MultiBinary, "
        "and Dict and Tuple of those (wrap the environment, e.g. with gymnasium's "
        "FlattenObservation, to turn it into one of them)"
    )


def default_value(space: Space) -> Any:
    """The set point an actuator holds before an agent sets one: a Discrete's first value,
    a Box's zero clipped into its bounds, zeros for MultiDiscrete and MultiBinary."""
    if isinstance(space, Discrete):
        return space.start
    if isinstance(space, Box):
        return np.clip(np.zeros(space.shape, dtype=space.dtype), space.low, space.high)
    shape = space.shape or ()
    return np.zeros(shape, dtype=space.dtype)


def informed(cls: type[InfoT], parts: list[Leaf], values: list[Any] | None = None) -> list[InfoT]:
    """The leaves as ``cls`` (sensors or actuators) with ``values``; None: each its default."""
    if values is None:
        values = [default_value(leaf.space) for leaf in parts]
    return [cls(value, leaf.space, leaf.uid) for value, leaf in zip(values, parts, strict=True)]


def split(value: Any, parts: list[Leaf]) -> list[Any]:
    """The values of ``parts`` cut from a gymnasium value (Discrete ones as plain ints)."""
    out: list[Any] = []
    for leaf in parts:
        part = value
        for key in leaf.path:
            part = part[key]
        if leaf.discrete and isinstance(part, np.integer | np.ndarray):
            part = int(part)
        out.append(part)
    return out


def join(values: Mapping[str, Any], parts: list[Leaf]) -> Any:
    """The gymnasium value made of the leaves' values by uid (dicts for Dict, tuples for
    Tuple); a single leaf without a path is the value itself."""
    if len(parts) == 1 and not parts[0].path:
        return values[parts[0].uid]
    root: dict[str | int, Any] = {}
    for leaf in parts:
        node = root
        for key in leaf.path[:-1]:
            node = node.setdefault(key, {})
        node[leaf.path[-1]] = values[leaf.uid]
    return _freeze(root)


def _freeze(node: Any) -> Any:
    """Nested dicts as built by :func:`join`: int keys become tuples, str keys stay dicts."""
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return tuple(_freeze(node[k]) for k in sorted(node))
    return {k: _freeze(v) for k, v in node.items()}
