"""A memory row's rewards built when read (``palaestra.agent.lazy_rows``): what an Objective
reads of them is what it read of the objects built at once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from palaestra.agent.lazy_rows import Lazy, RewardRows
from palaestra.agent.memory import Memory
from palaestra.core.information import RewardInformation
from palaestra.core.spaces import Box, Discrete, Space
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache

REWARDS = [
    pytest.param(Box(0.0, 1.0, shape=()), 0.1, id="float32 (0.1 is not one)"),
    pytest.param(Box(-np.inf, np.inf, shape=(), dtype=np.float64), 1e-7, id="float64"),
    pytest.param(Box(-np.inf, np.inf, shape=()), math.nan, id="nan"),
    pytest.param(Box(-np.inf, np.inf, shape=()), -math.inf, id="-inf"),
    pytest.param(Box(0, 10, shape=(), dtype=np.int64), 7, id="int Box"),
    pytest.param(Discrete(3), 2, id="Discrete"),
    pytest.param(Box(0.0, 1.0, shape=(2,)), [0.5, 0.1], id="two values (built)"),
    pytest.param(None, 3.5, id="no space"),
]


def described(space: Space | None, value: Any) -> m.InfoDesc:
    """A reward as a message carries it (its value as the environment process sends it)."""
    json = space.to_json_value(value) if space is not None else value
    return m.InfoDesc("env.reward", space.to_text() if space is not None else None, json)


def remembered(rewards: Any) -> Memory:
    memory = Memory(10, None)
    memory.append("Muscle-0", sensor_readings=[], actuator_setpoints=[], rewards=rewards)
    return memory


@pytest.mark.parametrize(("space", "value"), REWARDS)
def test_an_objective_reads_what_it_read_of_rewards_built_at_once(
    space: Space | None, value: Any
) -> None:
    reward = described(space, value)
    row = RewardRows(SpaceCache())([reward])
    assert isinstance(row, Lazy)
    lazy, built = remembered(row), remembered(SpaceCache().build(RewardInformation, [reward]))
    np.testing.assert_array_equal(lazy.latest_rewards(), built.latest_rewards())
    (ours,), (theirs,) = lazy.tail(1).reward_information[0], built.tail(1).reward_information[0]
    assert (ours.uid, ours.space) == (theirs.uid, theirs.space)
    np.testing.assert_array_equal(ours.value, theirs.value)
    assert type(ours.value) is type(theirs.value)


def test_rewards_of_other_spaces_get_a_maker_of_their_own() -> None:
    rows = RewardRows(SpaceCache())
    first = rows([described(Box(0.0, 1.0, shape=()), 0.5)])
    same = rows([described(Box(0.0, 1.0, shape=()), 0.25)])
    other = rows([described(Discrete(4), 3)])
    assert first.make is same.make and other.make is not first.make
    assert [r.value for r in [*first, *same, *other]] == [0.5, 0.25, 3]
    assert other[0].space == Discrete(4)


def test_rewards_a_plugin_changed_are_read_as_changed() -> None:
    """Once a plug-in has read a row's rewards, an Objective reads the objects it may have
    changed (an Objective that clips the newest rewards before its base class sums them)."""
    memory = remembered(RewardRows(SpaceCache())([described(Box(0.0, 10.0, shape=()), 5.0)]))
    assert memory.latest_rewards() == [5.0]
    (reward,) = memory.tail(1).reward_information[0]
    reward.value = min(float(reward.value), 1.0)
    assert memory.latest_rewards() == [1.0]
