"""Fast checks that a value lies in its space, for the per-step path: an environment's sensor
values and rewards (:mod:`palaestra.environment.checks`) and a Muscle's set points."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from palaestra.core.spaces import Box, Discrete, Space

Check = Callable[[Any], bool]


def value_check(space: Space | None) -> Check:
    """A fast ``space.contains`` for the per-step check (plain Python values of scalar
    spaces skip numpy); without a space, everything passes, and so does None (a value not
    set, which palaestrAI passes unchecked too)."""
    if space is None:
        return _anything
    space_contains = space.contains

    def contains(x: Any) -> bool:
        return x is None or space_contains(x)

    if isinstance(space, Discrete):
        low, end = space.start, space.start + space.n

        def discrete(x: Any) -> bool:
            return low <= x < end if type(x) is int else contains(x)

        return discrete
    if isinstance(space, Box) and space.shape == ():
        low_f, high_f = float(space.low), float(space.high)
        fast: tuple[type, ...] = (int, float) if space.dtype.kind == "f" else (int,)

        def scalar_box(x: Any) -> bool:
            return low_f <= x <= high_f if type(x) in fast else contains(x)

        return scalar_box
    if isinstance(space, Box) and space.dtype.kind == "f" and 0 < space.flat_dim <= SMALL_BOX:
        return _small_box(space)
    return contains


SMALL_BOX = 64
"""Float boxes up to this many elements are checked element by element in Python: for a few
values that is several times faster than numpy's comparisons."""


def _small_box(space: Box) -> Check:
    """``space.contains`` for a small float box, fast for a numeric array of its shape."""
    contains = space.contains
    shape = space.shape
    lows, highs = space.low.reshape(-1).tolist(), space.high.reshape(-1).tolist()

    def small_box(x: Any) -> bool:
        if type(x) is not np.ndarray or x.shape != shape or x.dtype.kind not in "iuf":
            return x is None or contains(x)
        # (a loop: half the time of all() on a generator; NaN is outside)
        for v, low, high in zip(x.ravel().tolist(), lows, highs, strict=True):
            if not low <= v <= high:
                return False
        return True

    return small_box


def _anything(x: Any) -> bool:
    return True


def column_inside(space: Space, values: Any) -> bool:
    """Whether every row of the array ``values`` (a value per game, along its first axis) is
    in ``space``: for a box or a discrete space and numbers of a fitting kind, in one
    comparison (False: unsure, or outside; then each row is checked alone)."""
    kind = values.dtype.kind
    if isinstance(space, Box) and kind in "iuf" and (space.dtype.kind == "f" or kind in "iu"):
        return bool(((values >= space.low) & (values <= space.high)).all())
    if isinstance(space, Discrete) and kind in "iu":
        return bool(((values >= space.start) & (values < space.start + space.n)).all())
    return False
