"""Unit tests of palaestra.core.information: the sensor, actuator and reward carriers."""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from palaestra.core.information import (
    ActuatorInformation,
    Information,
    RewardInformation,
    SensorInformation,
    json_value,
    rows_of,
)
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

CLASSES = [SensorInformation, ActuatorInformation, RewardInformation]
SPACES: list[Space] = [
    Discrete(4, start=1),
    Box(0, 1, shape=()),
    Box([-np.inf, 0.0], [np.inf, 1.0], dtype=np.float64),
    Box(0, 255, shape=(2, 3), dtype=np.uint8),
    MultiDiscrete([2, 3]),
    MultiBinary((2, 2)),
    Tuple(Discrete(2), Tuple(Box(-1, 1, shape=(2,)), MultiBinary(3))),
    Tuple(),
]
classes = st.sampled_from(CLASSES)
spaces = st.sampled_from(SPACES)
seeds = st.integers(0, 2**32)


def sampled(cls: type[Information], space: Space, seed: int) -> Information:
    space.seed(seed)
    return cls(space.sample(), space, "env.0")


def assert_plain(value: Any) -> None:
    if isinstance(value, list):
        for v in value:
            assert_plain(v)
    else:
        assert type(value) in (int, float, bool, type(None)), f"{value!r} is {type(value)}"


@pytest.mark.parametrize("cls", CLASSES)
def test_positional_and_keyword_construction(cls: type[Information]) -> None:
    space = Discrete(3)
    positional = cls(2, space, "env.1")
    keyword = cls(uid="env.1", space=space, value=2)
    assert (positional.value, positional.space, positional.uid) == (2, space, "env.1")
    assert positional == keyword
    empty = cls()
    assert (empty.value, empty.space, empty.uid) == (None, None, None)


@pytest.mark.parametrize("cls", CLASSES)
def test_properties_are_settable_and_slots_forbid_other_attributes(
    cls: type[Information],
) -> None:
    info = cls()
    info.value, info.space, info.uid = 1, Discrete(2), "a"
    assert (info.value, info.space, info.uid) == (1, Discrete(2), "a")
    assert not hasattr(info, "__dict__")
    with pytest.raises(AttributeError):
        info.other = 1  # type: ignore[attr-defined]


def test_construction_does_not_copy_or_validate() -> None:
    value = np.array([5.0, 5.0])
    info = SensorInformation(value, Box(0, 1, shape=(2,)), "s")
    assert info.value is value
    assert not info.contains()


def test_actuator_call_and_setpoint_alias() -> None:
    actuator = ActuatorInformation(None, Discrete(3), "env.act")
    assert actuator(2) is None
    with pytest.warns(DeprecationWarning, match="use value"):
        assert actuator.value == 2 and actuator.setpoint == 2
    with pytest.warns(DeprecationWarning):
        actuator.setpoint = 1
    assert actuator.value == 1


def test_reward_value_alias() -> None:
    reward = RewardInformation(1.5, Box(-10, 10, shape=()), "env.reward")
    with pytest.warns(DeprecationWarning, match="use value"):
        assert reward.reward_value == 1.5
    with pytest.warns(DeprecationWarning):
        reward.reward_value = -2.0
    assert reward.value == -2.0


def test_contains_checks_value_against_space() -> None:
    assert SensorInformation(2, Discrete(3)).contains()
    assert not SensorInformation(3, Discrete(3)).contains()
    assert not SensorInformation(1, None).contains()
    assert ActuatorInformation([0.5, 0.5], Box(0, 1, shape=(2,))).contains()


def test_len_is_the_spaces_or_one_and_objects_are_always_truthy() -> None:
    assert len(SensorInformation(1)) == 1
    assert len(SensorInformation(None, Box(0, 1, shape=(3, 4)))) == 12
    assert len(SensorInformation(None, Discrete(5))) == 5  # palaestrAI's len(space)
    assert len(SensorInformation(None, Tuple(Discrete(2), MultiBinary(3)))) == 2
    empty = SensorInformation((), Tuple())
    assert len(empty) == 0 and bool(empty)


def test_equality_compares_arrays_uid_space_and_class() -> None:
    space = Box(0, 1, shape=(2,))
    info = SensorInformation(np.array([0.1, 0.2]), space, "s")
    assert info == SensorInformation(np.array([0.1, 0.2]), Box(0, 1, shape=(2,)), "s")
    assert info != SensorInformation(np.array([0.1, 0.3]), space, "s")
    assert info != SensorInformation(np.array([0.1, 0.2, 0.3]), space, "s")
    assert info != SensorInformation(np.array([0.1, 0.2]), space, "t")
    assert info != SensorInformation(np.array([0.1, 0.2]), Box(0, 2, shape=(2,)), "s")
    assert info != SensorInformation(None, space, "s")
    assert info != ActuatorInformation(np.array([0.1, 0.2]), space, "s")
    assert info != "s"
    nested = Tuple(Discrete(2), Box(0, 1, shape=(2,)))
    a = SensorInformation((1, np.array([0.5, 0.5])), nested, "n")
    assert a == SensorInformation((1, np.array([0.5, 0.5])), nested, "n")
    assert a == SensorInformation([1, [0.5, 0.5]], nested, "n")
    assert a != SensorInformation((1, np.array([0.5, 0.6])), nested, "n")


def test_information_is_not_hashable() -> None:
    with pytest.raises(TypeError):
        hash(SensorInformation(1))


def test_repr_names_class_value_space_and_uid() -> None:
    text = repr(ActuatorInformation(2, Discrete(3), "env.a"))
    assert text == "ActuatorInformation(value=2, space=Discrete(3), uid='env.a')"


@given(classes, spaces, seeds)
def test_copy_is_equal_shares_space_and_owns_its_arrays(
    cls: type[Information], space: Space, seed: int
) -> None:
    info = sampled(cls, space, seed)
    copied = info.copy()
    assert type(copied) is cls and copied == info
    assert copied.space is info.space and copied.uid == info.uid

    def arrays(value: Any) -> list[np.ndarray]:
        if isinstance(value, np.ndarray):
            return [value]
        if isinstance(value, tuple):
            return [a for v in value for a in arrays(v)]
        return []

    for original, duplicate in zip(arrays(info.value), arrays(copied.value), strict=True):
        assert not np.shares_memory(original, duplicate)


def test_copy_copies_lists_and_dicts() -> None:
    info = SensorInformation({"a": [1, 2]}, None, "d")
    copied = info.copy()
    copied.value["a"].append(3)
    assert info.value == {"a": [1, 2]}


@given(classes, spaces, seeds)
def test_pickle_round_trip(cls: type[Information], space: Space, seed: int) -> None:
    info = sampled(cls, space, seed)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(info, protocol=protocol))
        assert type(again) is cls and again == info


@given(classes, spaces, seeds)
def test_json_value_with_space_is_plain_and_reads_back(
    cls: type[Information], space: Space, seed: int
) -> None:
    info = sampled(cls, space, seed)
    value = json_value(info)
    assert_plain(value)
    back = cls(space.from_json_value(json.loads(json.dumps(value))), space, info.uid)
    assert back == info


def test_json_value_with_space_uses_its_dtype() -> None:
    assert json_value(SensorInformation(np.int64(3), Discrete(4))) == 3
    assert type(json_value(SensorInformation(np.int64(3), Discrete(4)))) is int
    box_value = json_value(SensorInformation(np.array([0.5, 1.0]), Box(0, 1, shape=(2,))))
    assert box_value == [0.5, 1.0] and all(type(v) is float for v in box_value)


def test_json_value_without_space_converts_numpy() -> None:
    assert json_value(SensorInformation(np.float32(0.5))) == 0.5
    assert type(json_value(SensorInformation(np.float32(0.5)))) is float
    assert type(json_value(SensorInformation(np.bool_(True)))) is bool
    assert json_value(SensorInformation(np.arange(4).reshape(2, 2))) == [[0, 1], [2, 3]]
    nested = json_value(SensorInformation((np.int8(1), [np.array([1.5])], {"k": np.uint8(2)})))
    assert nested == [1, [[1.5]], {"k": 2}]
    assert json_value(SensorInformation("text")) == "text"
    assert json_value(SensorInformation(None)) is None


def test_an_object_pickled_before_its_slots_were_plain_attributes_reads_back() -> None:
    """Until 2026-11-30 the value, space and uid were properties over slots named ``_value``,
    ``_space`` and ``_uid`` (a call on every read); a Brain's dump pickled then still loads."""
    old = (  # pickle.dumps(SensorInformation(1.5, None, "env.s") with value_ids ["a"]), then
        b"\x80\x04\x95~\x00\x00\x00\x00\x00\x00\x00\x8c\x1apalaestra.core.information\x94\x8c"
        b"\x11SensorInformation\x94\x93\x94)\x81\x94N}\x94(\x8c\x06_value\x94G?\xf8\x00\x00"
        b"\x00\x00\x00\x00\x8c\x06_space\x94N\x8c\x04_uid\x94\x8c\x05env.s\x94\x8c\n_value_ids"
        b"\x94]\x94\x8c\x01a\x94au\x86\x94b."
    )
    info = pickle.loads(old)
    assert info == SensorInformation(1.5, None, "env.s", ["a"])
    assert (info.value, info.space, info.uid, info.value_ids) == (1.5, None, "env.s", ["a"])
    assert pickle.loads(pickle.dumps(info)) == info


@pytest.mark.parametrize("cls", CLASSES)
def test_rows_of_makes_what_the_constructor_makes_a_new_object_each(
    cls: type[Information],
) -> None:
    uids, spaces_ = ["env.a", "env.b"], [Discrete(3), None]
    columns = [[0, 1, 2], [[1.5], None, "x"]]
    rows = rows_of(cls, uids, spaces_, columns, 3)
    expected = [
        [
            cls(column[k], space, uid)
            for uid, space, column in zip(uids, spaces_, columns, strict=True)
        ]
        for k in range(3)
    ]
    assert rows == expected
    assert all(type(info) is cls and info.value_ids is None for row in rows for info in row)
    blank = rows_of(cls, uids, spaces_, None, 2)
    assert blank == [[cls(None, space, uid) for uid, space in zip(uids, spaces_, strict=True)]] * 2
    assert blank[0][0] is not blank[1][0]  # (each game its own: a Muscle may set them)
    assert rows_of(cls, uids, spaces_, None, 0) == []
