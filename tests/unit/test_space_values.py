"""Spaces and values as palaestrAI passes them: integer Box bounds that are infinite clamp to
the dtype's range (gymnasium's Box), and None (a value not set) travels as None, passes the
environment's check as palaestrAI's does, and never becomes NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.core.information import ActuatorInformation, SensorInformation, json_value
from palaestra.core.space_checks import value_check
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

gym_spaces = pytest.importorskip("gymnasium.spaces", reason="gymnasium compares the bounds")

INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]


EXACT = 2**53  # integers a float holds exactly: bounds given as floats, as MIDAS gives them


@st.composite
def integer_bounds(draw: Any, dtypes: list[Any]) -> tuple[Any, np.ndarray, np.ndarray]:
    """A dtype and float bounds of shape (n,): each element infinite (-inf for signed
    dtypes only) or a finite integer in the dtype's range."""
    dtype = draw(st.sampled_from(dtypes))
    info = np.iinfo(dtype)
    smallest, largest = max(int(info.min), -EXACT), min(int(info.max), EXACT)
    n = draw(st.integers(1, 4))
    lows, highs = [], []
    for _ in range(n):
        low = draw(st.integers(smallest, largest))
        high = draw(st.integers(low, largest))
        lows.append(-np.inf if info.min < 0 and draw(st.booleans()) else low)
        highs.append(np.inf if draw(st.booleans()) else high)
    return dtype, np.array(lows, dtype=float), np.array(highs, dtype=float)


SIGNED = [np.int8, np.int16, np.int32]
"""int64 too in the scalar test below: with array bounds gymnasium writes int64's maximum into
the float array, where it rounds to 2**63 and overflows to the minimum (its own bug)."""


@settings(max_examples=200, deadline=None)
@given(integer_bounds(SIGNED))
def test_infinite_integer_bounds_clamp_to_the_dtype_as_gymnasium_does(case: Any) -> None:
    dtype, low, high = case
    ours = Box(low, high, dtype=dtype)
    theirs = gym_spaces.Box(low.copy(), high.copy(), dtype=dtype)
    assert ours.low.tolist() == theirs.low.tolist()
    assert ours.high.tolist() == theirs.high.tolist()
    assert ours.dtype == theirs.dtype
    assert ours.contains(ours.sample())


@settings(max_examples=100, deadline=None)
@given(integer_bounds(INTEGERS))
def test_infinite_integer_bounds_are_the_dtype_range(case: Any) -> None:
    """Also for unsigned dtypes (+inf: their maximum; gymnasium 1.4 refuses +inf there)."""
    dtype, low, high = case
    box = Box(low, high, dtype=dtype)
    info = np.iinfo(dtype)
    expected_low = [info.min if np.isneginf(v) else int(v) for v in low]
    expected_high = [info.max if np.isposinf(v) else int(v) for v in high]
    assert box.low.tolist() == expected_low and box.high.tolist() == expected_high
    assert box.contains(box.sample())


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_an_unsigned_box_cannot_start_at_minus_infinity(dtype: Any) -> None:
    with pytest.raises(ValueError, match="must not be -inf"):
        Box(-np.inf, 3, dtype=dtype)
    with pytest.raises(ValueError):
        gym_spaces.Box(np.array([-np.inf]), np.array([3.0]), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_midas_integer_sensors_with_infinite_bounds(dtype: Any) -> None:
    """midas-powergrid's ``tap_pos``: ``Box(-inf, inf, (1,), int)``."""
    box = Box(-np.inf, np.inf, shape=(1,), dtype=dtype)
    theirs = gym_spaces.Box(-np.inf, np.inf, shape=(1,), dtype=dtype)
    assert box.low.tolist() == theirs.low.tolist() == [np.iinfo(dtype).min]
    assert box.high.tolist() == theirs.high.tolist() == [np.iinfo(dtype).max]
    assert box.contains(np.array([3], dtype=dtype))


SPACES = st.sampled_from(
    [
        Box(0.0, 1.0, shape=(2,)),
        Box(-np.inf, np.inf, shape=(), dtype=np.float64),
        Box(0, 5, shape=(), dtype=np.int64),
        Box(-np.inf, np.inf, shape=(1,), dtype=np.int32),
        Discrete(3),
        Discrete(4, start=-1),
        MultiDiscrete([2, 3]),
        MultiBinary(3),
        Tuple([Discrete(2), Box(0.0, 1.0)]),
    ]
)


@settings(max_examples=60, deadline=None)
@given(SPACES, st.integers(0, 2**31 - 1))
def test_none_travels_as_none_and_passes_the_check(space: Space, seed: int) -> None:
    assert space.to_json_value(None) is None  # never NaN, never an error
    assert space.from_json_value(None) is None
    for info in (SensorInformation(None, space, "s"), ActuatorInformation(None, space, "a")):
        assert json_value(info) is None
    check = value_check(space)
    assert check(None)  # not set: passed unchecked, as palaestrAI's assert_value_in_space
    space.seed(seed)
    value = space.sample()
    assert check(value)
    back = space.from_json_value(space.to_json_value(value))
    assert space.to_json_value(back) == space.to_json_value(value)


@pytest.mark.parametrize(
    ("space", "outside"),
    [(Discrete(3), 3), (Box(0, 5, shape=(), dtype=np.int64), 6), (MultiBinary(2), [0, 2])],
)
def test_a_value_that_is_set_is_still_checked(space: Space, outside: Any) -> None:
    assert not value_check(space)(outside)


def test_a_scalar_integer_box_with_infinite_bounds() -> None:
    box = Box(-np.inf, np.inf, shape=(), dtype=np.int32)
    assert (int(box.low), int(box.high)) == (np.iinfo(np.int32).min, np.iinfo(np.int32).max)
    assert box.shape == () and box.contains(np.int32(7))
