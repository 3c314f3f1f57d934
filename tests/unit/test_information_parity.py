"""palaestrAI's information and space API on palaestra's classes: the call syntax of
``SensorInformation``/``ActuatorInformation``/``RewardInformation`` (positional order,
``value_ids``, the deprecated keywords and properties), ``len`` of spaces and information, and
``to_vector``/``reshape_to_space``. The expected values are what palaestrAI 3.5.18 gives."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete, Space, Tuple

# --- information ------------------------------------------------------------------------------


def test_positional_order_and_value_ids() -> None:
    sensor = SensorInformation(2, Discrete(3), "s", ["a"])
    assert (sensor.value, sensor.space, sensor.uid, sensor.value_ids) == (
        2,
        Discrete(3),
        "s",
        ["a"],
    )
    actuator = ActuatorInformation(1, Discrete(3), "a", ["v"])
    assert actuator.value_ids == ["v"]
    assert RewardInformation(1.0, Box(0, 2, shape=()), "r").value_ids is None
    assert SensorInformation(value=1, space=Discrete(3), uid="x", value_ids=("p",)).value_ids == (
        "p",
    )
    # value_ids take part in equality, and survive copies and pickles
    assert sensor != SensorInformation(2, Discrete(3), "s")
    assert sensor == SensorInformation(2, Discrete(3), "s", ["a"])
    assert sensor.copy() == sensor and sensor.copy().value_ids is not sensor.value_ids
    assert pickle.loads(pickle.dumps(sensor)) == sensor


def test_deprecated_constructor_keywords() -> None:
    sensor = SensorInformation(sensor_value=1, observation_space=Discrete(3), sensor_id="x")
    assert (sensor.value, sensor.space, sensor.uid) == (1, Discrete(3), "x")
    actuator = ActuatorInformation(setpoint=1, action_space=Discrete(3), actuator_id="y")
    assert (actuator.value, actuator.space, actuator.uid) == (1, Discrete(3), "y")
    reward = RewardInformation(
        reward_value=1.5, observation_space=Box(0, 2, shape=()), reward_id="z"
    )
    assert (reward.value, reward.space, reward.uid) == (1.5, Box(0, 2, shape=()), "z")
    # the new keyword wins where both are given
    assert SensorInformation(value=3, sensor_value=1).value == 3


@pytest.mark.parametrize(
    ("info", "name", "instead"),
    [
        (SensorInformation(1, Discrete(3), "s"), "sensor_value", "value"),
        (SensorInformation(1, Discrete(3), "s"), "sensor_id", "uid"),
        (SensorInformation(1, Discrete(3), "s"), "observation_space", "space"),
        (SensorInformation(1, Discrete(3), "s"), "id", "uid"),
        (ActuatorInformation(1, Discrete(3), "a"), "setpoint", "value"),
        (ActuatorInformation(1, Discrete(3), "a"), "actuator_id", "uid"),
        (ActuatorInformation(1, Discrete(3), "a"), "action_space", "space"),
        (RewardInformation(1.0, None, "r"), "reward_value", "value"),
        (RewardInformation(1.0, None, "r"), "reward_id", "uid"),
        (RewardInformation(1.0, None, "r"), "observation_space", "space"),
    ],
)
def test_deprecated_properties_read_and_write_with_a_warning(
    info: SensorInformation | ActuatorInformation | RewardInformation, name: str, instead: str
) -> None:
    replacement = {"value": 2, "uid": "new", "space": Discrete(5)}[instead]
    with pytest.warns(DeprecationWarning, match=f"{name} is deprecated.*use {instead}"):
        assert getattr(info, name) == getattr(info, instead)
    with pytest.warns(DeprecationWarning):
        setattr(info, name, replacement)
    assert getattr(info, instead) == replacement


def test_calling_and_adding() -> None:
    assert SensorInformation(2, Discrete(3), "s")() == 2
    reward = RewardInformation(1.5, Box(0, 2, shape=()), "r")
    assert reward() == 1.5 and reward + 1 == 2.5
    actuator = ActuatorInformation(None, Discrete(3), "a")
    actuator(2)
    assert actuator.value == 2


def test_len_of_information_is_len_of_its_space() -> None:
    assert len(SensorInformation(2, Discrete(3), "s")) == 3
    assert len(ActuatorInformation(None, MultiDiscrete([2, 3]), "a")) == 5


# --- spaces -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("space", "length"),
    [
        (Box(0, 1, shape=(3, 4)), 12),
        (Box(0, 1, shape=()), 1),
        (Discrete(4), 4),
        (MultiDiscrete([2, 3]), 5),
        (MultiBinary(3), 3),
        (MultiBinary((2, 2)), 4),
        (Tuple(Discrete(4), MultiBinary(3)), 2),
    ],
)
def test_len_of_spaces(space: Space, length: int) -> None:
    assert len(space) == length
    assert bool(space)  # whatever its length


def test_box_reshape_to_space_and_to_vector() -> None:
    box = Box(0, 1, shape=(2, 2), dtype=np.float64)
    shaped = box.reshape_to_space([0.1, 0.2, 0.3, 0.4])
    assert shaped.shape == (2, 2) and shaped.dtype == np.float64
    np.testing.assert_array_equal(shaped, [[0.1, 0.2], [0.3, 0.4]])
    assert Box(0, 1, shape=(2,)).reshape_to_space([0.5, 1]).dtype == np.float32
    assert box.to_vector(np.array([[1, 2], [3, 4]])).tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="needs 4 values, got 3"):
        box.reshape_to_space([1, 2, 3])


def test_discrete_to_vector_is_one_hot_and_back() -> None:
    space = Discrete(4)
    assert space.to_vector(np.array(2)).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert space.reshape_to_space([0, 0, 1, 0]) == 2
    assert space.reshape_to_space([0.1, 0.7, 0.1, 0.1]) == 1  # the largest score
    assert space.reshape_to_space(3) == 3  # a scalar stays
    shifted = Discrete(3, start=5)
    assert shifted.to_vector(6).tolist() == [0.0, 1.0, 0.0]
    assert shifted.reshape_to_space([0, 1, 0]) == 6


def test_multi_discrete_vectors_both_ways() -> None:
    space = MultiDiscrete([2, 3])
    assert space.to_vector(np.array([1, 2])).tolist() == [0, 1, 0, 0, 1]
    assert space.to_vector(np.array([1, 2]), as_argmax=True).tolist() == [0, 0, 0, 0, 0, 1]
    assert space.reshape_to_space([0, 1, 0, 0, 1]).tolist() == [1, 2]
    assert space.reshape_to_space([0, 0, 0, 0, 0, 1]).tolist() == [1, 2]
    ambiguous = MultiDiscrete([2, 2])  # sum == product: the form must be named
    with pytest.raises(ValueError, match="as_argmax"):
        ambiguous.reshape_to_space([0, 1, 1, 0])
    assert ambiguous.reshape_to_space([0, 1, 1, 0], as_argmax=False).tolist() == [1, 0]


def test_multi_binary_and_tuple_vectors() -> None:
    assert MultiBinary(3).reshape_to_space([1, 0, 1]).tolist() == [1, 0, 1]
    assert MultiBinary(3).to_vector(np.array([1, 0, 1])).tolist() == [1, 0, 1]
    space = Tuple(Discrete(2), Box(0, 1, shape=(2,)))
    assert space.to_vector((1, np.array([0.5, 0.25]))).tolist() == [0.0, 1.0, 0.5, 0.25]
    back = space.reshape_to_space([[1, 0], [0.5, 0.25]])
    assert back[0] == 0 and back[1].tolist() == [0.5, 0.25]
