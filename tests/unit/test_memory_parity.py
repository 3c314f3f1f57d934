"""An agent's memory as palaestrAI's brains and objectives use it: :meth:`Memory.tail`'s shard
with palaestrAI's fields and types, each muscle's rows (``memory._data[muscle]``), ``tail``
with ``include_only``, a ``size_limit`` that takes effect when set, and ``append`` in
palaestrAI's argument order with ``terminated``/``truncated``."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest

from palaestra.agent.lazy_rows import RewardRows
from palaestra.agent.memory import Memory, MemoryShard
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache


def step(
    memory: Memory, muscle: str, i: int, done: bool = False, objective: Any = None, **flags: Any
) -> None:
    memory.append(
        muscle,
        [
            SensorInformation(float(i), Box(0, 100, shape=()), "env.s0"),
            SensorInformation(np.array([i + 0.5]), Box(0, 100, shape=(1,)), "env.s1"),
        ],
        [ActuatorInformation(i % 3, Discrete(3), "env.a0")],
        [
            RewardInformation(float(i), Box(0, 100, shape=()), "r"),
            RewardInformation(1.0, None, "q"),
        ],
        done,
        objective=objective,
        **flags,
    )


def test_the_shard_has_palaestrais_fields_and_types() -> None:
    memory = Memory()
    for i in range(3):
        step(memory, "m0", i, done=i == 2, objective=np.array([i * 1.5]))
    shard = memory.tail(2)
    assert isinstance(shard, MemoryShard) and len(shard) == 2
    for table in (shard.sensor_readings, shard.actuator_setpoints, shard.rewards):
        assert isinstance(table, pd.DataFrame) and len(table) == 2
    assert shard.sensor_readings.to_dict("list") == {"env.s0": [1.0, 2.0], "env.s1": [1.5, 2.5]}
    assert shard.actuator_setpoints.to_dict("list") == {"env.a0": [1, 2]}
    assert shard.rewards.to_dict("list") == {"r": [1.0, 2.0], "q": [1.0, 1.0]}
    assert shard.objective.dtype == np.float64 and shard.objective.tolist() == [1.5, 3.0]
    assert shard.dones.dtype == bool and shard.dones.tolist() == [False, True]
    assert shard.terminated is None and shard.truncated is None  # the rows do not say
    # what palaestrAI's brains and objectives do with it
    assert shard.objective[-1:].item() == 3.0 and memory.tail(1).dones.item()
    assert np.array(memory.tail(1).sensor_readings).flatten().tolist() == [2.0, 2.5]
    assert float(memory.tail(1).rewards.sum(axis=1)[0]) == 3.0  # palaestrAI's DummyObjective
    assert memory.tail(1).rewards[["r"]].values.tolist() == [[2.0]]  # AggregateRewards...


def test_terminated_and_truncated_are_arrays_when_every_row_says() -> None:
    memory = Memory()
    step(memory, "m0", 0)
    step(memory, "m0", 1, done=True, terminated=False, truncated=True)
    last = memory.tail(1)
    assert last.terminated is not None and last.truncated is not None
    assert last.terminated.tolist() == [False] and last.truncated.tolist() == [True]
    assert memory.tail(2).terminated is None  # the first row does not say


def test_an_empty_shard() -> None:
    shard = Memory().tail(3)
    assert len(shard) == 0
    assert shard.rewards.empty and shard.sensor_readings.empty
    assert shard.objective.shape == (0,) and shard.dones.shape == (0,)
    assert shard.terminated is not None and shard.terminated.shape == (0,)


def test_append_takes_palaestrais_argument_order() -> None:
    memory = Memory()
    memory.append(
        "m0",
        [],
        [],
        [RewardInformation(1.0, None, "r")],
        True,
        np.array([0.1, 0.2]),  # observations
        np.array([1.0]),  # actions
        np.array([7.0]),  # objective
        {"extra": 1},  # additional data
    )
    shard = memory.tail(1)
    assert shard.objective.tolist() == [7.0]
    assert shard.observations.tolist() == [[0.1, 0.2]]
    assert shard.actions.tolist() == [[1.0]]
    assert shard.additional_data == [{"extra": 1}]


def test_each_muscles_rows_are_at_hand_and_their_objective_can_be_set() -> None:
    memory = Memory()
    for i in range(4):
        step(memory, f"m{i % 2}", i, objective=float(i))
    assert memory.tags == {"m0", "m1"}
    own = memory._data["m1"]
    assert len(own) == 2 and len(own.rewards) == 2
    assert [float(v) for v in own.objective] == [1.0, 3.0]
    assert [s[0].value for s in own.sensor_readings] == [1.0, 3.0]
    assert list(own.dones) == [False, False]
    own.objective[-1] = np.array([0.25])  # palaestrAI's objective normalisation does this
    assert memory.tail(1).objective.tolist() == [0.25]
    assert np.array(memory._data["m0"].objective).flatten().tolist() == [0.0, 2.0]
    assert sorted(memory._data) == ["m0", "m1"]
    assert len(memory.muscle_memory("nobody")) == 0


def test_tail_include_only_picks_the_newest_rows_of_those_muscles() -> None:
    memory = Memory()
    for i in range(6):
        step(memory, f"m{i % 3}", i)
    assert memory.tail(2, include_only=["m1"]).muscle_uids == ["m1", "m1"]
    assert memory.tail(2, include_only=["m1"]).rewards["r"].tolist() == [1.0, 4.0]
    assert memory.tail(10, include_only=["m0", "m2"]).muscle_uids == ["m0", "m2", "m0", "m2"]
    assert len(memory.tail(3, include_only=["nobody"])) == 0


def test_size_limit_takes_effect_when_set() -> None:
    memory = Memory()
    for i in range(10):
        step(memory, f"m{i % 2}", i)
    memory.size_limit = 4  # palaestrAI's SAC brain sets its replay size so
    assert memory.size_limit == 4 and len(memory) == 4
    assert memory.tail(10).rewards["r"].tolist() == [6.0, 7.0, 8.0, 9.0]
    for i in range(10, 20):
        step(memory, f"m{i % 2}", i)
        assert len(memory) <= 4
    # each muscle's rows follow
    assert [s[0].value for s in memory._data["m0"].sensor_readings] == [16.0, 18.0]
    assert len(memory._data["m1"]) == 2
    with pytest.raises(ValueError, match="size_limit must be an integer >= 1"):
        memory.size_limit = 0


def test_truncate_as_palaestrai() -> None:
    memory = Memory()
    for i in range(5):
        step(memory, "m0", i)
    memory.truncate(-2)  # counts as 2
    assert memory.tail(5).rewards["r"].tolist() == [3.0, 4.0]
    memory.truncate(0)
    assert len(memory) == 0 and len(memory._data["m0"]) == 0


def test_the_tables_without_pandas_say_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = Memory()
    step(memory, "m0", 1, objective=2.0)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    shard = memory.tail(1)
    assert shard.objective.tolist() == [2.0]  # the arrays need no pandas
    assert shard.reward_information[0][0].value == 1.0
    with pytest.raises(ImportError, match=r"pip install 'palaestra\[pandas\]'"):
        _ = shard.rewards


def test_values_of_several_elements_are_laid_down_their_column_as_palaestrai_does() -> None:
    """palaestrAI 3.5.18 gives, for two rows of two Box(shape=(2,)) sensors, one actuator of
    shape (2,) and a scalar reward, these tables (checked with it)."""
    memory = Memory()
    for i in range(2):
        memory.append(
            "m0",
            sensor_readings=[
                SensorInformation(np.array([i, i + 0.5]), Box(0, 9, shape=(2,)), "v"),
                SensorInformation(np.array([3.0, 4.0]) * i, Box(0, 9, shape=(2,)), "w"),
            ],
            actuator_setpoints=[ActuatorInformation(np.array([1, 2]), Box(0, 9, (2,)), "a")],
            rewards=[RewardInformation(float(i), Box(0, 9, shape=()), "r")],
            done=False,
            objective=np.array([i]),
        )
    shard = memory.tail(2)
    assert shard.sensor_readings.to_dict("list") == {
        "v": [0.0, 0.5, 1.0, 1.5],
        "w": [0.0, 0.0, 3.0, 4.0],
    }
    assert list(shard.sensor_readings.index) == [0, 1, 2, 3]
    assert shard.actuator_setpoints.to_dict("list") == {"a": [1, 2, 1, 2]}
    assert shard.rewards.to_dict("list") == {"r": [0.0, 1.0]}
    assert all(dtype == np.float64 for dtype in shard.sensor_readings.dtypes)
    # a matrix is flattened in row-major order, as numpy's reshape(-1)
    memory.append(
        "m0",
        [SensorInformation(np.array([[1.0, 2.0], [3.0, 4.0]]), Box(0, 9, (2, 2)), "m")],
        [],
        [RewardInformation(0.0, None, "r")],
        False,
    )
    assert memory.tail(1).sensor_readings["m"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_rewards_of_one_uid_from_two_environments_are_both_laid_down_their_column() -> None:
    """Two environments of a phase that name a reward alike give a row two rewards of that uid
    (a Brain's memory keeps them as its transition carried them): palaestrAI 3.5.18's table
    gives both, one under the other in the uid's column, as the elements of one value (its
    ``_infos_to_df`` appends each value of a uid); a uid of the row that does not repeat is NaN
    below its value (palaestrAI fails there)."""
    both = [m.InfoDesc("r", None, 1.0), m.InfoDesc("r", None, 0.5)]
    memory = Memory()
    memory.append("m0", [], [], RewardRows(SpaceCache())(both), False)
    pair = [RewardInformation(2.0, None, "r"), RewardInformation(0.25, None, "r")]
    memory.append("m0", [], [], pair, False)
    shard = memory.tail(2)
    assert len(shard) == 2
    assert shard.rewards.to_dict("list") == {"r": [1.0, 0.5, 2.0, 0.25]}
    assert list(shard.rewards.index) == [0, 1, 2, 3]
    assert memory.tail(1).rewards["r"].tolist() == [2.0, 0.25]
    assert float(memory.tail(1).rewards.sum().sum()) == 2.25  # each counts
    # values of several elements: each value's elements, the first value's first
    box = Box(0, 9, shape=(2,))
    memory.append(
        "m0",
        [],
        [],
        [
            RewardInformation(np.array([1.0, 2.0]), box, "v"),
            RewardInformation(7.0, None, "q"),
            RewardInformation(np.array([3.0, 4.0]), box, "v"),
        ],
        False,
    )
    table = memory.tail(1).rewards
    assert table["v"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert table["q"].iloc[0] == 7.0 and table["q"].iloc[1:].isna().all()
    # sensors and set points of a uid that repeats are laid down alike
    memory.append(
        "m0",
        [SensorInformation(1.0, None, "s"), SensorInformation(2.0, None, "s")],
        [ActuatorInformation(0, Discrete(3), "a"), ActuatorInformation(2, Discrete(3), "a")],
        pair,
        False,
    )
    assert memory.tail(1).sensor_readings["s"].tolist() == [1.0, 2.0]
    assert memory.tail(1).actuator_setpoints["a"].tolist() == [0, 2]


def shard_by_hand() -> MemoryShard:
    return MemoryShard(
        sensor_readings=pd.DataFrame({"x": [1]}),
        actuator_setpoints=pd.DataFrame(),
        rewards=pd.DataFrame({"r": [2.0]}),
        dones=np.array([True]),
        observations=np.array([[np.nan]]),
        actions=np.array([[np.nan]]),
        objective=np.array([1.0]),
        additional_data=[None],
    )


def test_the_constructor_takes_palaestrais_fields() -> None:
    shard = shard_by_hand()
    assert len(shard) == 1  # the rows of rewards, as palaestrAI's
    assert shard.rewards.to_dict("list") == {"r": [2.0]} and shard.dones.tolist() == [True]
    assert shard.terminated is None and shard.truncated is None
    assert shard.decision_indices is None
    assert shard.sensor_information == []  # no information objects when built by hand
    positional = MemoryShard(*[getattr(shard, f) for f in ("sensor_readings",
        "actuator_setpoints", "rewards", "dones", "observations", "actions", "objective",
        "additional_data")], np.array([True]))  # fmt: skip
    assert positional.terminated is not None and positional.terminated.tolist() == [True]


def test_concat_joins_shards_as_palaestrai_does() -> None:
    """The same shards as in palaestrAI 3.5.18 give the same tables and arrays (checked with
    it), but observations and actions keep every row (palaestrAI's keep one per shard)."""
    memory = Memory()
    for i in range(2):
        memory.append(
            "m0",
            [SensorInformation(float(i), Box(0, 9, shape=()), "x")],
            [],
            [RewardInformation(float(i), Box(0, 9, shape=()), "r")],
            False,
            objective=float(i),
        )
    joined = MemoryShard.concat([shard_by_hand(), memory.tail(2)])
    assert len(joined) == 3
    assert joined.rewards.to_dict("list") == {"r": [2.0, 0.0, 1.0]}
    assert joined.sensor_readings.to_dict("list") == {"x": [1.0, 0.0, 1.0]}
    assert joined.dones.tolist() == [True, False, False]
    assert joined.objective.tolist() == [1.0, 0.0, 1.0]
    assert joined.observations.shape == (3, 1)
    assert joined.terminated is None  # not every shard says
    assert len(joined.additional_data) == 3  # one entry per row

    # shards of a memory's rows stay rows: the information objects are kept
    rows = MemoryShard.concat([memory.tail(1), memory.tail(2)])
    assert len(rows) == 3 and [len(s) for s in rows.sensor_information] == [1, 1, 1]
    assert rows.rewards.to_dict("list") == {"r": [1.0, 0.0, 1.0]}

    empty = MemoryShard.concat([])
    assert len(empty) == 0 and empty.dones.shape == (0,) and empty.rewards.empty
