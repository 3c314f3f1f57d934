"""Unit tests of palaestra.core.spaces: sampling, containment, conversions, errors."""

from __future__ import annotations

import json
import math
import pickle
import sys
import types
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

# --- strategies ----------------------------------------------------------------------------

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.uint64]

discretes = st.builds(Discrete, st.integers(1, 1000), start=st.integers(-100, 100))
multi_discretes = st.lists(st.integers(1, 50), min_size=1, max_size=4).map(MultiDiscrete)
multi_binaries = st.one_of(
    st.integers(1, 6), st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)
).map(MultiBinary)
shapes = st.lists(st.integers(0, 3), max_size=2).map(tuple)


@st.composite
def boxes(draw: st.DrawFn) -> Box:
    dtype = np.dtype(draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES)))
    shape = draw(shapes)
    size = math.prod(shape)
    if dtype.kind == "f":
        finite = st.floats(-1e3, 1e3, allow_nan=False)
        lows = draw(st.lists(st.one_of(finite, st.just(-math.inf)), min_size=size, max_size=size))
        widths = st.one_of(st.floats(0, 1e3), st.just(math.inf))
        highs = [
            low + w if math.isfinite(low) else draw(st.one_of(finite, st.just(math.inf)))
            for low, w in zip(
                lows, draw(st.lists(widths, min_size=size, max_size=size)), strict=True
            )
        ]
    else:
        info = np.iinfo(dtype)
        lows = draw(
            st.lists(st.integers(int(info.min), int(info.max)), min_size=size, max_size=size)
        )
        highs = [draw(st.integers(low, int(info.max))) for low in lows]
    low = np.array(lows, dtype=np.float64 if dtype.kind == "f" else dtype).reshape(shape)
    high = np.array(highs, dtype=np.float64 if dtype.kind == "f" else dtype).reshape(shape)
    return Box(low, high, shape=shape, dtype=dtype)


leaf_spaces = st.one_of(discretes, boxes(), multi_discretes, multi_binaries)
any_spaces = st.recursive(
    leaf_spaces, lambda children: st.lists(children, max_size=3).map(Tuple), max_leaves=6
)
seeds = st.integers(0, 2**63)


def assert_plain(value: Any) -> None:
    """Fail if ``value`` holds anything but int, float, bool, None and lists of those."""
    if isinstance(value, list):
        for v in value:
            assert_plain(v)
    else:
        assert type(value) in (int, float, bool, type(None)), f"{value!r} is {type(value)}"


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


# --- properties of every space ---------------------------------------------------------------


@given(any_spaces, seeds)
@settings(max_examples=200)
def test_sample_is_always_contained(space: Space, seed: int) -> None:
    space.seed(seed)
    for _ in range(3):
        x = space.sample()
        assert space.contains(x)
        assert x in space


@given(any_spaces, seeds)
def test_same_seed_gives_same_samples_also_on_an_equal_copy(space: Space, seed: int) -> None:
    space.seed(seed)
    first = [space.sample() for _ in range(3)]
    space.seed(seed)
    assert all(map(same_value, first, [space.sample() for _ in range(3)]))
    twin = Space.from_dict(space.to_dict())
    twin.seed(seed)
    assert all(map(same_value, first, [twin.sample() for _ in range(3)]))


@given(any_spaces)
def test_to_dict_round_trips_through_strict_json_and_msgpack(space: Space) -> None:
    d = space.to_dict()
    again = Space.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert again == space and hash(again) == hash(space)
    assert again.to_dict() == d
    assert again.dtype == space.dtype
    assert Space.from_dict(msgspec.msgpack.decode(msgspec.msgpack.encode(d))) == space


@given(any_spaces)
def test_the_text_messages_carry_is_the_description_as_strict_json_and_reads_back(
    space: Space,
) -> None:
    text = space.to_text()
    assert json.loads(text) == space.to_dict()  # (strict: no NaN or Infinity in it)
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in {text}"))
    again = Space.from_text(text)
    assert again == space and again.dtype == space.dtype and again.to_text() == text
    assert space.to_text() is text  # (made once)


@pytest.mark.parametrize("text", ["", "{", '{"type": "Nothing"}', "[1, 2]"])
def test_a_text_that_describes_no_space_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        Space.from_text(text)


@given(any_spaces)
def test_to_string_round_trips_and_is_repr(space: Space) -> None:
    text = space.to_string()
    assert repr(space) == text
    again = Space.from_string(text)
    assert again == space
    assert again.to_string() == text


@given(any_spaces, seeds)
def test_json_value_is_plain_and_round_trips(space: Space, seed: int) -> None:
    space.seed(seed)
    x = space.sample()
    v = space.to_json_value(x)
    assert_plain(v)
    back = space.from_json_value(json.loads(json.dumps(v)))
    assert same_value(back, x)
    assert space.contains(back)


@given(any_spaces, seeds)
def test_flatten_is_1d_float_of_flat_dim(space: Space, seed: int) -> None:
    space.seed(seed)
    flat = space.flatten(space.sample())
    assert flat.dtype == np.float64 and flat.shape == (space.flat_dim,)


@given(any_spaces)
def test_pickle_keeps_equality(space: Space) -> None:
    assert pickle.loads(pickle.dumps(space)) == space


def test_a_seeded_space_makes_its_generator_when_first_drawn_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Muscle's actuator spaces are seeded at each episode's start: the generator is made at
    the first draw after a seed (most Muscles never draw), and draws as one seeded then."""
    space = Discrete(1000)
    made: list[int | None] = []
    default_rng = np.random.default_rng
    monkeypatch.setattr(
        np.random, "default_rng", lambda seed=None: made.append(seed) or default_rng(seed)
    )
    for seed in (5, 6, 7):
        space.seed(seed)
    assert made == []
    draws = [space.sample() for _ in range(5)]
    assert made == [7] and draws == list(default_rng(7).integers(1000, size=5))


def test_unseeded_generator_is_made_lazily_and_reseeding_resets_it() -> None:
    space = Discrete(1000)
    assert space._np_random is None
    space.sample()
    assert isinstance(space.np_random, np.random.Generator)
    space.seed(7)
    a = [space.sample() for _ in range(10)]
    space.seed(8)
    assert [space.sample() for _ in range(10)] != a


def test_equality_ignores_generator_and_distinguishes_types() -> None:
    a, b = Discrete(3), Discrete(3)
    a.seed(1)
    assert a == b and hash(a) == hash(b)
    assert Discrete(3) != Discrete(3, start=1)
    assert Discrete(2) != MultiBinary(1)
    assert Discrete(2) != "Discrete(2)"
    assert len({Discrete(2), Discrete(2), Box(0, 1), Box(0.0, 1.0)}) == 2


# --- Discrete -------------------------------------------------------------------------------


def test_discrete_values_and_containment() -> None:
    space = Discrete(3, start=-1)
    space.seed(0)
    samples = {space.sample() for _ in range(200)}
    assert samples == {-1, 0, 1}
    assert all(type(s) is int for s in samples)
    assert space.contains(-1) and space.contains(np.int8(1)) and space.contains(np.array(0))
    assert not space.contains(2) and not space.contains(-2)
    assert not space.contains(0.0) and not space.contains(True) and not space.contains("0")
    assert not space.contains(np.array([0]))


def test_discrete_conversions() -> None:
    space = Discrete(5)
    assert space.to_string() == "Discrete(5)"
    assert Discrete(5, start=2).to_string() == "Discrete(5, start=2)"
    assert space.to_dict() == {"type": "Discrete", "n": 5, "start": 0}
    assert space.flatten(np.int64(3)).tolist() == [3.0] and space.flat_dim == 1
    assert type(space.to_json_value(np.int64(3))) is int
    assert space.from_json_value(3) == 3 and space.shape == ()


@pytest.mark.parametrize(
    ("n", "message"),
    [(0, "must be positive"), (-3, "must be positive"), (2.5, "integer"), (True, "integer")],
)
def test_discrete_rejects_bad_n(n: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Discrete(n)


# --- Box ------------------------------------------------------------------------------------


def test_box_shape_from_scalars_arrays_and_explicit_shape() -> None:
    assert Box(0, 1).shape == (1,)
    assert Box([0, 0], 1).shape == (2,)
    assert Box(np.zeros((2, 3)), np.ones(3)).shape == (2, 3)
    box = Box(-1.0, 2.0, shape=(2, 2), dtype=np.float64)
    assert box.low.tolist() == [[-1.0, -1.0], [-1.0, -1.0]] and box.dtype == np.float64
    assert Box(0, 1, shape=3).shape == (3,)


def test_scalar_box_samples_0d_arrays_and_contains_python_floats() -> None:
    box = Box(0, 1, shape=())
    box.seed(3)
    x = box.sample()
    assert isinstance(x, np.ndarray) and x.shape == () and x.dtype == np.float32
    assert box.contains(0.5) and box.contains(1) and not box.contains(1.5)
    assert not box.contains([0.5])
    assert box.to_string() == "Box(low=0.0, high=1.0, shape=(), dtype=np.float32)"
    assert type(box.to_json_value(x)) is float


def test_box_containment() -> None:
    box = Box(0, 1, shape=(2,))
    assert box.contains([0.1, 0.2]) and box.contains(np.array([0, 1], dtype=np.int64))
    assert box.contains(np.array([0.5, 0.5], dtype=np.float64))
    assert not box.contains([0.1, 1.2]) and not box.contains([-0.1, 0.5])
    assert not box.contains([0.1]) and not box.contains([[0.1, 0.2]])
    assert not box.contains([0.1, math.nan]) and not box.contains(["a", "b"])
    assert not box.contains([[0.1], 0.2]) and not box.contains(None)
    ints = Box(0, 10, shape=(2,), dtype=np.int32)
    assert ints.contains([3, 10]) and not ints.contains([3.0, 4.0])
    assert not ints.contains(np.array([True, False]))


def test_box_string_matches_palaestrai_form() -> None:
    assert Box(0.0, 1.0).to_string() == "Box(low=[0.0], high=[1.0], shape=(1,), dtype=np.float32)"
    ints = Box(0, [3, 4], dtype=np.int64)
    assert ints.to_string() == "Box(low=[0, 0], high=[3, 4], shape=(2,), dtype=np.int64)"


@pytest.mark.parametrize(
    "text",
    [
        "Box(low=[0.0, -1.0], high=[1.0, 1.0], shape=(2,), dtype=np.float32)",
        "Box(low=[0.0, -1.0],\n    high=[1.0, 1.0], shape=(2,), dtype=numpy.float32)",
        "Box(low=[0.0, -1.0], high=1.0, shape=(2,), dtype=float32)",
        "Box(low=[0.0, -1.0], high=[1.0, 1.0], shape=(2,), dtype=<class 'numpy.float32'>)",
        "Box([0.0, -1.0], [1.0, 1.0], (2,), np.float32)",
        "  Box( low = [0, -1], high = [1, 1] )  ",
    ],
)
def test_box_from_string_accepts_variants(text: str) -> None:
    assert Space.from_string(text) == Box([0.0, -1.0], [1.0, 1.0])


def test_box_infinite_bounds_round_trip_and_sample() -> None:
    box = Box([-np.inf, 0.0, -np.inf], [1.0, np.inf, np.inf])
    assert box.to_string() == (
        "Box(low=[-inf, 0.0, -inf], high=[1.0, inf, inf], shape=(3,), dtype=np.float32)"
    )
    assert box.to_dict()["low"] == ["-inf", 0.0, "-inf"]
    assert box.to_dict()["high"] == [1.0, "inf", "inf"]
    box.seed(0)
    for _ in range(50):
        x = box.sample()
        assert np.isfinite(x).all() and box.contains(x)


def test_box_extreme_bounds_sample_without_overflow() -> None:
    big = np.finfo(np.float64).max
    box = Box(-big, big, shape=(4,), dtype=np.float64)
    box.seed(1)
    assert all(np.isfinite(box.sample()).all() for _ in range(20))
    full = Box(np.iinfo(np.int64).min, np.iinfo(np.int64).max, shape=(4,), dtype=np.int64)
    full.seed(1)
    assert full.contains(full.sample())


def test_box_uniform_bounds_are_stored_as_scalars_in_dict() -> None:
    d = Box(0.0, 1.0, shape=(84, 84, 3)).to_dict()
    assert d == {"type": "Box", "low": 0.0, "high": 1.0, "shape": [84, 84, 3], "dtype": "float32"}


def test_box_normalises_negative_zero_and_byte_order() -> None:
    a, b = Box(-0.0, 1.0), Box(0.0, 1.0)
    assert a == b and hash(a) == hash(b)
    assert Box(0, 1, dtype=np.dtype(">f4")) == Box(0, 1, dtype=np.float32)


def test_box_bounds_are_read_only() -> None:
    box = Box(0, 1, shape=(2,))
    with pytest.raises(ValueError, match="read-only"):
        box.low[0] = 5


def test_box_samples_integer_endpoints() -> None:
    box = Box(0, 2, shape=(), dtype=np.uint8)
    box.seed(5)
    assert {int(box.sample()) for _ in range(200)} == {0, 1, 2}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"low": 1.0, "high": 0.0}, r"low must not exceed high, but at index \(0,\)"),
        ({"low": [0, 2], "high": [1, 1]}, r"at index \(1,\) low=2.0 > high=1.0"),
        ({"low": [0, 0, 0], "high": 1, "shape": (2,)}, r"low of shape \(3,\) does not fit"),
        ({"low": [0, 0], "high": [1, 1, 1]}, "low .* and high .* differ"),
        ({"low": math.nan, "high": 1.0}, "must not be NaN"),
        ({"low": 0.5, "high": 3, "dtype": np.int32}, "finite integers"),
        ({"low": -math.inf, "high": 3, "dtype": np.uint8}, "must not be -inf"),
        ({"low": 0, "high": 300, "dtype": np.uint8}, "out of the range of uint8"),
        ({"low": 0, "high": 1e300, "dtype": np.float32}, "out of the range of float32"),
        ({"low": 0, "high": 1, "dtype": bool}, "integer or float type"),
        ({"low": 0, "high": 1, "dtype": "np.nonsense"}, "unknown dtype"),
        ({"low": "a", "high": 1}, "low must be numeric"),
        ({"low": 0, "high": 1, "shape": (-1,)}, "must not be negative"),
        ({"low": 0, "high": 1, "shape": (1.5,)}, "must be an integer"),
    ],
)
def test_box_rejects_invalid_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Box(**kwargs)


# --- MultiDiscrete and MultiBinary ------------------------------------------------------------


def test_multi_discrete() -> None:
    space = MultiDiscrete([2, 3])
    assert space.to_string() == "MultiDiscrete([2, 3])"
    assert space.to_dict() == {"type": "MultiDiscrete", "nvec": [2, 3]}
    assert space.contains([1, 2]) and space.contains(np.array([0, 0], dtype=np.uint8))
    assert not space.contains([2, 0]) and not space.contains([-1, 0])
    assert not space.contains([1.0, 2.0]) and not space.contains([1, 2, 0])
    grid = MultiDiscrete([[2, 3], [4, 5]])
    grid.seed(0)
    x = grid.sample()
    assert x.shape == (2, 2) and x.dtype == np.int64 and grid.contains(x)
    assert Space.from_string(grid.to_string()) == grid


@pytest.mark.parametrize("nvec", [[], [0, 2], [2, -1], [1.5], "ab"])
def test_multi_discrete_rejects_bad_nvec(nvec: Any) -> None:
    with pytest.raises(ValueError, match="nvec must be positive integers"):
        MultiDiscrete(nvec)


def test_multi_binary() -> None:
    space = MultiBinary(3)
    assert space.n == 3 and MultiBinary((3,)).n == 3 and MultiBinary((3,)) == space
    assert space.to_string() == "MultiBinary(3)"
    assert MultiBinary((2, 3)).to_string() == "MultiBinary((2, 3))"
    assert MultiBinary([2, 3]).to_dict() == {"type": "MultiBinary", "n": [2, 3]}
    assert space.contains([0, 1, 1]) and space.contains(np.array([True, False, True]))
    assert not space.contains([0, 2, 1]) and not space.contains([0, 1])
    assert not space.contains([0.0, 1.0, 1.0])
    space.seed(2)
    x = space.sample()
    assert x.dtype == np.int8 and x.shape == (3,)


@pytest.mark.parametrize("n", [0, -1, (2, 0), (), 1.5])
def test_multi_binary_rejects_bad_n(n: Any) -> None:
    with pytest.raises(ValueError, match="MultiBinary n must"):
        MultiBinary(n)


# --- Tuple ----------------------------------------------------------------------------------


def test_tuple_sequence_argument_len_and_indexing() -> None:
    parts = [Discrete(2), Box(0, 1)]
    space = Tuple(*parts)
    assert Tuple(parts) == space and Tuple(tuple(parts)) == space
    assert len(space) == 2 and space[1] == Box(0, 1) and list(space) == parts
    assert space.to_string() == (
        "Tuple(Discrete(2), Box(low=[0.0], high=[1.0], shape=(1,), dtype=np.float32))"
    )
    assert space.flat_dim == 2


def test_tuple_containment() -> None:
    space = Tuple(Discrete(2), Box(0, 1, shape=(2,)))
    assert space.contains((1, [0.5, 0.5])) and space.contains([0, np.zeros(2)])
    assert not space.contains((2, [0.5, 0.5])) and not space.contains((1,))
    assert not space.contains(1) and not space.contains((1, [0.5, 0.5], 0))


def test_tuple_seeds_children_deterministically_and_differently() -> None:
    space = Tuple(Discrete(1000), Discrete(1000))
    space.seed(42)
    first = [space.sample() for _ in range(20)]
    assert [a for a, _ in first] != [b for _, b in first]
    space.seed(42)
    assert [space.sample() for _ in range(20)] == first
    space.seed(43)
    assert [space.sample() for _ in range(20)] != first
    child = Discrete(1000)
    space.seed(42)
    child.seed(42)
    assert [space[0].sample() for _ in range(20)] != [child.sample() for _ in range(20)]


def test_tuple_json_value_flatten_and_empty_tuple() -> None:
    space = Tuple(Discrete(3), Tuple(MultiBinary(2)))
    value = (np.int64(2), (np.array([1, 0], dtype=np.int8),))
    assert space.to_json_value(value) == [2, [[1, 0]]]
    assert space.flatten(value).tolist() == [2.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="needs 2 values, got 1"):
        space.from_json_value([1])
    empty = Tuple()
    assert empty.sample() == () and empty.flat_dim == 0 and empty.flatten(()).shape == (0,)
    assert Space.from_string("Tuple()") == empty


def test_tuple_rejects_non_spaces() -> None:
    with pytest.raises(ValueError, match="Tuple elements must be spaces"):
        Tuple(Discrete(2), 3)


# --- parsing and decoding errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Discrete(0)", "must be positive"),
        ("Foo(1)", "unknown space type 'Foo'"),
        ("Discrete 5", "not a space description"),
        ("Discrete(5", "not a space description"),
        ("Discrete(5))", "unbalanced brackets"),
        ("Discrete(5,,)", "empty argument"),
        ("Discrete(n=5, 1)", "positional argument after keyword"),
        ("Discrete(5, m=1)", "wrong arguments for Discrete"),
        ("Discrete(5, 1, 2)", "wrong arguments for Discrete"),
        ("Tuple(x=Discrete(2))", "wrong arguments for Tuple"),
        ("Tuple(5)", "not a space description"),
        ("Discrete(__import__('os').getpid())", "must be an integer"),
        ("__import__('os')", "unknown space type '__import__'"),
        ("Box(low=0, high=1, dtype=os.system)", "unknown dtype"),
    ],
)
def test_from_string_rejects_invalid_text_without_evaluating_it(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Space.from_string(text)


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({"type": "Nope"}, "unknown space type 'Nope'"),
        ({"n": 3}, "unknown space type None"),
        ("Discrete(3)", "unknown space type None"),
        ({"type": "Discrete"}, "invalid Discrete description"),
        ({"type": "Discrete", "n": 3, "extra": 1}, "invalid Discrete description"),
        ({"type": "Box", "low": 0}, "invalid Box description"),
        ({"type": "Tuple"}, "invalid Tuple description"),
        ({"type": "Tuple", "spaces": [{"type": "Discrete", "n": 0}]}, "must be positive"),
    ],
)
def test_from_dict_rejects_invalid_descriptions(d: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Space.from_dict(d)


# --- gymnasium --------------------------------------------------------------------------------


def test_gymnasium_missing_raises_import_error_with_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(ImportError, match="pip install gymnasium"):
        Discrete(2).to_gymnasium()
    with pytest.raises(ImportError, match="pip install gymnasium"):
        Space.from_gymnasium(object())


def _fake_gymnasium() -> types.ModuleType:
    """A stand-in with the attributes palaestra reads from gymnasium's spaces."""

    class FakeDiscrete:
        def __init__(self, n: int, start: int = 0) -> None:
            self.n, self.start = np.int64(n), np.int64(start)

    class FakeBox:
        def __init__(self, low: Any, high: Any, shape: Any, dtype: Any) -> None:
            self.low, self.high = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
            self.shape, self.dtype = shape, np.dtype(dtype)

    class FakeMultiDiscrete:
        def __init__(self, nvec: Any) -> None:
            self.nvec, self.start = np.asarray(nvec), np.zeros_like(nvec)

    class FakeMultiBinary:
        def __init__(self, n: Any) -> None:
            self.n, self.shape = n, (n,) if isinstance(n, int) else tuple(n)

    class FakeTuple:
        def __init__(self, spaces: Any) -> None:
            self.spaces = tuple(spaces)

    module = types.ModuleType("gymnasium")
    module.spaces = types.SimpleNamespace(  # type: ignore[attr-defined]
        Discrete=FakeDiscrete,
        Box=FakeBox,
        MultiDiscrete=FakeMultiDiscrete,
        MultiBinary=FakeMultiBinary,
        Tuple=FakeTuple,
    )
    return module


@given(any_spaces)
def test_gymnasium_conversion_round_trips_with_a_stand_in(space: Space) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setitem(sys.modules, "gymnasium", _fake_gymnasium())
        converted = space.to_gymnasium()
        assert type(converted).__name__ == f"Fake{type(space).__name__}"
        assert Space.from_gymnasium(converted) == space


def test_from_gymnasium_rejects_unknown_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", _fake_gymnasium())
    with pytest.raises(ValueError, match="cannot convert gymnasium space"):
        Space.from_gymnasium(object())


@given(any_spaces, seeds)
def test_real_gymnasium_round_trip(space: Space, seed: int) -> None:
    pytest.importorskip("gymnasium")
    converted = space.to_gymnasium()
    assert Space.from_gymnasium(converted) == space
    space.seed(seed)
    assert converted.contains(space.sample())


def test_real_gymnasium_samples_are_contained() -> None:
    gymnasium = pytest.importorskip("gymnasium")
    space = Tuple(Discrete(3, start=1), Box([-np.inf, 0], [1, 2]), MultiBinary((2, 2)))
    converted = space.to_gymnasium()
    assert isinstance(converted, gymnasium.spaces.Tuple)
    converted.seed(0)
    assert all(space.contains(converted.sample()) for _ in range(20))
