"""Values with as many elements as their Box, in another shape: reshaped, warned once."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from palaestra.core.information import RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment.shapes import ShapeFix


class Gym:
    """Stands for the environment named in the warning."""


def test_a_value_of_the_same_size_is_reshaped_into_the_space_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fix = ShapeFix("Environment-myenv-0")
    space = Box(-10.0, 10.0, shape=())
    reward = RewardInformation(np.array([1.5]), space, "gym.reward")
    with caplog.at_level(logging.WARNING, logger="palaestra.environment.shapes"):
        fixed = fix.fixed(Gym(), "update", "reward", reward, space)
        again = fix.fixed(Gym(), "update", "reward", reward, space)
    assert fixed is not None and again is not None
    assert fixed.value.shape == () and float(fixed.value) == 1.5 and space.contains(fixed.value)
    assert reward.value.shape == (1,)  # the environment's own object is left alone
    (record,) = caplog.records
    message = record.getMessage()
    assert "Environment-myenv-0: Gym.update returned reward 'gym.reward' with shape (1,)" in (
        message
    )
    assert "has shape ()" in message


def test_a_sensor_is_warned_about_apart_from_a_reward(caplog: pytest.LogCaptureFixture) -> None:
    fix = ShapeFix("env")
    space = Box(0.0, 1.0, shape=(2, 2))
    sensor = SensorInformation(np.full(4, 0.5), space, "grid")
    with caplog.at_level(logging.WARNING, logger="palaestra.environment.shapes"):
        fixed = fix.fixed(Gym(), "update", "sensor", sensor, space)
    assert fixed is not None and fixed.value.shape == (2, 2)
    assert len(caplog.records) == 1 and "sensor 'grid'" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("value", "space"),
    [
        (np.array([1.0, 2.0]), Box(-10.0, 10.0, shape=())),  # more elements than the space
        (np.array([100.0]), Box(-10.0, 10.0, shape=())),  # outside once reshaped
        (np.array([1]), Discrete(3)),  # not a Box
        (np.array(["a"], dtype=object), Box(-1.0, 1.0, shape=())),  # not numbers
    ],
)
def test_other_values_are_left_to_be_refused(value: np.ndarray, space: object) -> None:
    reward = RewardInformation(value, space, "r")  # type: ignore[arg-type]
    assert ShapeFix("env").fixed(Gym(), "update", "reward", reward, space) is None  # type: ignore[arg-type]
