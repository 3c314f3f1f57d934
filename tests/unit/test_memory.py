"""Tests of an agent's memory and the dummy plug-ins: :mod:`palaestra.agent.memory`,
:mod:`~palaestra.agent.dummy_objective`, :mod:`~palaestra.agent.dummy_brain` and
:mod:`~palaestra.agent.dummy_muscle`."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import palaestra
from palaestra.agent.brain import Brain
from palaestra.agent.context import BrainContext, BrainDumps, MuscleContext
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.agent.dummy_objective import DummyObjective
from palaestra.agent.lazy_rows import RewardRows, SensorRow, SetpointRow, ValueParts
from palaestra.agent.memory import MadeRow, Memory, MemoryShard
from palaestra.agent.muscle import Muscle
from palaestra.agent.objective import Objective, objective_values, per_row
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.plugin import PluginError
from palaestra.core.spaces import Box, Discrete, MultiBinary
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache

# --- helpers ----------------------------------------------------------------------------------


def sensors(*values: float) -> list[SensorInformation]:
    return [
        SensorInformation(v, Box(-10, 10, shape=()), f"env.s{i}") for i, v in enumerate(values)
    ]


def setpoints(*values: int) -> list[ActuatorInformation]:
    return [ActuatorInformation(v, Discrete(5), f"env.a{i}") for i, v in enumerate(values)]


def rewards(**values: Any) -> list[RewardInformation]:
    return [RewardInformation(v, None, uid) for uid, v in values.items()]


def row(memory: Memory, uid: str = "m0", done: bool = False, **reward_values: Any) -> None:
    memory.append(uid, sensors(1.0, 2.0), setpoints(3), rewards(**reward_values), done)


# --- Memory -----------------------------------------------------------------------------------


def test_empty_memory() -> None:
    memory = Memory()
    assert len(memory) == 0
    shard = memory.tail(5)
    assert isinstance(shard, MemoryShard)
    assert len(shard) == 0
    assert shard.rewards.shape == (0, 0)
    assert shard.objective.shape == (0,)
    assert shard.dones.shape == (0,)
    assert shard.dones.dtype == bool
    assert list(shard.rewards.columns) == []


def test_append_and_len() -> None:
    memory = Memory()
    for i in range(3):
        row(memory, uid=f"m{i}", r=float(i))
    assert len(memory) == 3


def test_tail_shapes_and_contents_oldest_first() -> None:
    memory = Memory()
    s = [sensors(float(i)) for i in range(4)]
    a = [setpoints(i) for i in range(4)]
    for i in range(4):
        memory.append(f"m{i}", s[i], a[i], rewards(r=i * 10.0, q=-i), done=(i == 3))
    shard = memory.tail(3)
    assert len(shard) == 3
    assert shard.muscle_uids == ["m1", "m2", "m3"]
    assert shard.sensor_information == [s[1], s[2], s[3]]
    assert shard.setpoint_information == [a[1], a[2], a[3]]
    assert shard.sensor_readings["env.s0"].tolist() == [1.0, 2.0, 3.0]
    assert shard.actuator_setpoints["env.a0"].tolist() == [1, 2, 3]
    assert list(shard.rewards.columns) == ["r", "q"]
    assert shard.rewards.shape == (3, 2)
    np.testing.assert_array_equal(shard.rewards, [[10.0, -1.0], [20.0, -2.0], [30.0, -3.0]])
    assert shard.objective.shape == (3,)
    assert np.isnan(shard.objective).all()
    np.testing.assert_array_equal(shard.dones, [False, False, True])
    assert shard.dones.dtype == bool


def test_tail_default_is_the_newest_row() -> None:
    memory = Memory()
    row(memory, uid="old", r=1.0)
    row(memory, uid="new", r=2.0)
    shard = memory.tail()
    assert shard.muscle_uids == ["new"]
    np.testing.assert_array_equal(shard.rewards, [[2.0]])


@pytest.mark.parametrize("n", [3, 4, 100])
def test_tail_with_n_larger_than_len_returns_everything(n: int) -> None:
    memory = Memory()
    for i in range(3):
        row(memory, uid=f"m{i}", r=float(i))
    shard = memory.tail(n)
    assert len(shard) == 3
    assert shard.muscle_uids == ["m0", "m1", "m2"]
    assert shard.rewards.shape == (3, 1)


@pytest.mark.parametrize("n", [0, -1, -100])
def test_tail_of_zero_or_negative_rows_is_empty(n: int) -> None:
    memory = Memory()
    row(memory, r=1.0)
    shard = memory.tail(n)
    assert len(shard) == 0
    assert shard.rewards.shape == (0, 0)


def test_tail_does_not_consume_rows() -> None:
    memory = Memory()
    row(memory, r=1.0)
    memory.tail(1)
    memory.tail(1)
    assert len(memory) == 1


def test_objective_only_append_sets_the_last_rows_objective() -> None:
    memory = Memory()
    row(memory, uid="a", r=1.0)
    row(memory, uid="b", r=2.0)
    memory.append("b", objective=0.5)
    assert len(memory) == 2
    shard = memory.tail(2)
    assert np.isnan(shard.objective[0])
    assert shard.objective[1] == 0.5
    # later calls overwrite; array-like objectives give their first element
    memory.append("b", objective=np.array([[1.5, 9.0]]))
    assert memory.tail(1).objective[0] == 1.5


def test_objective_only_append_on_empty_memory_does_nothing() -> None:
    memory = Memory()
    memory.append("m", objective=1.0)
    assert len(memory) == 0


def test_append_without_anything_does_nothing() -> None:
    memory = Memory()
    row(memory, r=1.0)
    memory.append("m")
    assert len(memory) == 1
    assert np.isnan(memory.tail(1).objective[0])


def test_append_with_objective_and_data_adds_a_row_with_that_objective() -> None:
    memory = Memory()
    memory.append("m", sensors(1.0), setpoints(1), rewards(r=1.0), False, objective=np.float32(2))
    shard = memory.tail(1)
    assert shard.objective.tolist() == [2.0]


def test_append_with_only_some_parts_pairs_them_as_palaestrai_does() -> None:
    """A row is made by the call that gives rewards; what calls without them gave waits for it
    (the readings and set points the memory was given first belong to its first row)."""
    memory = Memory()
    memory.append("m", sensor_readings=sensors(1.0))
    memory.append("m", actuator_setpoints=setpoints(2))
    assert len(memory) == 0
    memory.append("m", rewards=rewards(r=3.0), done=True)
    assert len(memory) == 1
    shard = memory.tail(3)
    assert [len(s) for s in shard.sensor_information] == [1]
    assert [len(a) for a in shard.setpoint_information] == [1]
    assert shard.sensor_readings.columns.tolist() == ["env.s0"]
    assert shard.rewards["r"].tolist() == [3.0]
    assert shard.dones.tolist() == [True]


def test_steps_appended_as_palaestrais_rollout_worker_appends_them_stay_aligned() -> None:
    """Readings and set points first, the rewards and done of the step after, then the
    objective (palaestrAI's rollout worker): one row a step, each with its own values (the
    readings of one step were paired with the rewards of another, every step two rows)."""
    memory = Memory()
    for step in range(3):
        memory.append("m", sensors(float(step)), setpoints(step))
        memory.append("m", rewards=rewards(r=10.0 + step), done=step == 2)
        memory.append("m", objective=np.array([100.0 + step]))
    memory.append("other", sensors(9.0), setpoints(9))  # waits for its rewards
    assert len(memory) == 3
    shard = memory.tail(2)
    assert shard.sensor_readings["env.s0"].tolist() == [1.0, 2.0]
    assert shard.rewards["r"].tolist() == [11.0, 12.0]
    assert shard.objective.tolist() == [101.0, 102.0]
    assert shard.dones.tolist() == [False, True]
    memory.append("other", rewards=rewards(r=5.0))
    other = memory.tail(1)
    assert other.sensor_readings["env.s0"].tolist() == [9.0]
    assert other.rewards["r"].tolist() == [5.0]


def test_rewards_with_different_uids_per_row_are_nan_where_missing() -> None:
    memory = Memory()
    memory.append("m", [], [], rewards(a=1.0), False)
    memory.append("m", [], [], rewards(b=2.0, a=3.0), False)
    memory.append("m", [], [], rewards(c=4.0), False)
    memory.append("m", [], [], [], False)
    shard = memory.tail(4)
    assert list(shard.rewards.columns) == ["a", "b", "c"]
    expected = np.array(
        [
            [1.0, np.nan, np.nan],
            [3.0, 2.0, np.nan],
            [np.nan, np.nan, 4.0],
            [np.nan, np.nan, np.nan],
        ]
    )
    np.testing.assert_array_equal(shard.rewards.to_numpy(dtype=float), expected)


def test_reward_columns_only_for_the_rows_asked_for() -> None:
    memory = Memory()
    memory.append("m", [], [], rewards(old=1.0), False)
    memory.append("m", [], [], rewards(new=2.0), False)
    shard = memory.tail(1)
    assert list(shard.rewards.columns) == ["new"]
    np.testing.assert_array_equal(shard.rewards, [[2.0]])


def test_reward_values_are_table_cells() -> None:
    """A value of one element is a scalar cell (as in palaestrAI's tables), a larger one is
    laid down its column over as many table rows (palaestrAI's layout; the shorter values of
    the memory row are NaN below theirs, where palaestrAI fails)."""
    memory = Memory()
    memory.append(
        "m",
        [],
        [],
        rewards(i=3, f=np.float32(0.5), one=np.array([1.5]), a=np.array([1.0, 2.0]), s="x"),
        False,
    )
    table = memory.tail(1).rewards
    assert len(table) == 2
    row = table.iloc[0]
    assert (row["i"], row["f"], row["one"], row["s"], row["a"]) == (3, 0.5, 1.5, "x", 1.0)
    assert table["a"].tolist() == [1.0, 2.0] and np.isnan(table["i"].iloc[1])


@pytest.mark.parametrize("uid", [None, 0])
def test_non_string_reward_uids_give_one_column(uid: Any) -> None:
    memory = Memory()
    memory.append("m", [], [], [RewardInformation(1.0, None, uid)], False)
    memory.append("m", [], [], [RewardInformation(2.0, None, uid)], False)
    shard = memory.tail(2)
    assert list(shard.rewards.columns) == [uid]
    np.testing.assert_array_equal(shard.rewards, [[1.0], [2.0]])


def test_size_limit_keeps_the_newest_rows() -> None:
    memory = Memory(size_limit=3)
    assert memory.size_limit == 3
    for i in range(7):
        row(memory, uid=f"m{i}", r=float(i))
        assert len(memory) == min(i + 1, 3)
    shard = memory.tail(10)
    assert shard.muscle_uids == ["m4", "m5", "m6"]
    assert shard.rewards["r"].tolist() == [4.0, 5.0, 6.0]


def test_a_full_memory_drops_each_muscles_oldest_with_its_own() -> None:
    """The oldest row leaves the memory and its muscle's rows together, one at a time as rows
    come and at once when the limit is lowered."""
    memory = Memory(size_limit=4)
    for i in range(11):
        row(memory, uid="a" if i % 3 else "b", r=float(i))
    assert memory.tail(10).rewards["r"].tolist() == [7.0, 8.0, 9.0, 10.0]
    assert memory.tail(10, include_only="a").rewards["r"].tolist() == [7.0, 8.0, 10.0]
    assert memory.tail(10, include_only="b").rewards["r"].tolist() == [9.0]
    memory.size_limit = 2
    row(memory, uid="b", r=11.0)
    assert memory.tail(10).rewards["r"].tolist() == [10.0, 11.0]
    assert memory.tail(10, include_only="a").rewards["r"].tolist() == [10.0]
    assert memory.tail(10, include_only="b").rewards["r"].tolist() == [11.0]


def test_default_size_limit() -> None:
    assert Memory().size_limit == 1_000_000


def test_truncate_keeps_the_last_n_rows() -> None:
    memory = Memory()
    for i in range(5):
        row(memory, uid=f"m{i}", r=float(i))
    memory.truncate(10)
    assert len(memory) == 5
    memory.truncate(2)
    assert len(memory) == 2
    assert memory.tail(5).muscle_uids == ["m3", "m4"]
    memory.truncate(0)
    assert len(memory) == 0
    row(memory, uid="again", r=1.0)
    assert memory.tail(5).muscle_uids == ["again"]


# --- DummyObjective ---------------------------------------------------------------------------


def test_dummy_objective_sums_the_newest_rewards() -> None:
    objective = DummyObjective(params=1)
    assert isinstance(objective, Objective)
    assert objective.params == 1
    memory = Memory()
    memory.append("m", [], [], rewards(a=100.0), False)
    memory.append("m", [], [], rewards(a=1.5, b=2.0, c=-0.5), False)
    result = objective.internal_reward(memory)
    assert result == 3.0
    assert isinstance(result, float)


def test_dummy_objective_ignores_rewards_missing_from_the_newest_row() -> None:
    memory = Memory()
    memory.append("m", [], [], rewards(a=1.0, b=2.0), False)
    memory.append("m", [], [], rewards(b=5.0), False)
    assert DummyObjective().internal_reward(memory) == 5.0


def test_dummy_objective_on_empty_memory_or_no_rewards_is_zero() -> None:
    memory = Memory()
    assert DummyObjective().internal_reward(memory) == 0.0
    memory.append("m", sensors(1.0), setpoints(1), [], False)
    assert DummyObjective().internal_reward(memory) == 0.0


def test_dummy_objective_takes_a_rounds_memories_at_once_as_it_takes_each() -> None:
    """``internal_rewards`` of a round's memories equals ``internal_reward`` of each: one
    reward, several, none, NaN (left out), -0.0 (0.0), an int, an empty memory; a subclass's
    own ``internal_reward`` is called. (Rows of rewards as a message carried them: the round
    tests, ``test_rounds``.)"""
    memories = [Memory() for _ in range(7)]
    for memory, given in zip(
        memories[:6],
        [dict(a=2.5), dict(a=1.5, b=2.0), {}, dict(a=math.nan), dict(a=-0.0), dict(a=3)],
        strict=True,
    ):
        memory.append("m", [], [], rewards(**given), False)
    objective = DummyObjective()
    each = [objective.internal_reward(memory) for memory in memories]
    assert objective.internal_rewards(memories) == each == [2.5, 3.5, 0.0, 0.0, 0.0, 3.0, 0.0]
    assert all(type(value) is float for value in objective.internal_rewards(memories))

    class Doubled(DummyObjective):
        def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
            return 2 * super().internal_reward(memory)

    assert Doubled().internal_rewards(memories[:2]) == [5.0, 7.0]


def test_a_round_is_answered_row_by_row_where_a_subclass_has_its_own_internal_reward() -> None:
    """A subclass of an Objective that takes a round at once (``DummyObjective``) with its own
    ``internal_reward`` is asked row by row, and a failure there names that method."""

    class Broken(DummyObjective):
        def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
            raise RuntimeError("no objective today")

    class Batched(Objective):
        def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
            return 1.0

        def internal_rewards(self, memories: Sequence[Memory]) -> Sequence[float | None]:
            return [2.0] * len(memories)

    assert [per_row(c) for c in (Broken, Batched, DummyObjective)] == [True, False, False]
    memory = Memory()
    memory.append("m", [], [], rewards(a=1.0), False)
    assert objective_values(Batched(), [memory]) == [2.0]
    with pytest.raises(PluginError, match=r"Broken\.internal_reward\b") as failed:
        objective_values(Broken(), [memory, memory])
    assert "internal_rewards" not in str(failed.value)


def test_objective_params_from_keywords() -> None:
    assert DummyObjective(alpha=2).params == {"alpha": 2}


# --- DummyBrain -------------------------------------------------------------------------------


def brain_context(dumps: BrainDumps) -> BrainContext:
    return BrainContext(
        name="defender",
        run_uid="run-1",
        phase_index=0,
        phase_name="phase_0",
        mode="train",
        seed=1234,
        sensors=sensors(1.0),
        actuators=setpoints(0),
        dumps=dumps,
    )


def test_dummy_brain_thinking() -> None:
    brain = DummyBrain(some="param")
    assert isinstance(brain, Brain)
    assert brain.params == {"some": "param"}
    assert brain.thinking("m0", None) == 0
    assert brain.thinking("m0", 0) == 1
    assert brain.thinking("m1", 41) == 42
    assert brain.thinking("m1", -1) == 0
    assert brain.thinking_calls == 4
    assert brain.value == 0


def test_dummy_brain_store_and_load_round_trip() -> None:
    written: list[tuple[bytes, str]] = []
    brain = DummyBrain()
    brain.attach(brain_context(BrainDumps(loaded=None, write=lambda d, t: written.append((d, t)))))
    brain.load()  # nothing to load: unchanged
    assert (brain.value, brain.thinking_calls, brain.loaded_calls) == (0, 0, 0)
    for data in (None, 1, 2, 9):
        brain.thinking("m0", data)
    brain.store()
    assert len(written) == 1
    dump, tag = written[0]
    assert isinstance(dump, bytes)
    assert tag == ""
    assert json.loads(dump) == {"value": 10, "thinking_calls": 4}

    again = DummyBrain()
    again.attach(brain_context(BrainDumps(loaded=dump)))
    again.load()
    assert again.value == 10
    assert again.thinking_calls == 4
    assert again.loaded_calls == 4
    # the count carries over the load
    again.thinking("m0", 3)
    assert again.thinking_calls == 5
    assert again.loaded_calls == 4
    assert again.value == 4


def test_brain_context_is_reachable_only_after_attach() -> None:
    brain = DummyBrain()
    with pytest.raises(RuntimeError, match="no context"):
        _ = brain.context
    with pytest.raises(AttributeError):
        brain.context = brain_context(BrainDumps())  # type: ignore[misc]
    context = brain_context(BrainDumps())
    brain.attach(context)
    assert brain.context is context
    assert (brain.name, brain.seed, brain.mode) == ("defender", 1234, "train")
    assert brain.sensors is context.sensors
    assert brain.actuators is context.actuators
    assert brain.dumpers is context.dumps


def test_brain_dump_from_a_file_object_and_without_a_writer() -> None:
    written: list[tuple[bytes, str]] = []
    brain = DummyBrain()
    brain.attach(brain_context(BrainDumps(write=lambda d, t: written.append((d, t)))))
    brain.store_brain_dump(io.BytesIO(b"raw"), tag="best")
    assert written == [(b"raw", "best")]
    silent = DummyBrain()
    silent.attach(brain_context(BrainDumps()))
    silent.store()  # no writer: nothing happens
    assert silent.load_brain_dump() is None


def test_brain_memory_is_per_brain() -> None:
    a, b = DummyBrain(), DummyBrain()
    a.memory.append("m", [], [], rewards(r=1.0), False)
    assert len(a.memory) == 1
    assert len(b.memory) == 0
    assert a.memory is a.memory


# --- DummyMuscle ------------------------------------------------------------------------------


def actuators() -> list[ActuatorInformation]:
    return [
        ActuatorInformation(None, Discrete(5), "env.0"),
        ActuatorInformation(None, Box(-1.0, 1.0, shape=(3,)), "env.1"),
        ActuatorInformation(None, MultiBinary(4), "env.2"),
        ActuatorInformation("unchanged", None, "env.3"),
    ]


def muscle_context(acts: list[ActuatorInformation], seed: int = 7) -> MuscleContext:
    return MuscleContext(
        name="attacker",
        uid="Muscle-attacker-0",
        worker=0,
        mode="train",
        seed=seed,
        sensors=sensors(0.0),
        actuators=acts,
        rng=np.random.default_rng(seed),
    )


def seeded_run(seed: int, steps: int = 5, **params: Any) -> list[list[Any]]:
    acts = actuators()
    for i, actuator in enumerate(acts):
        if actuator.space is not None:
            actuator.space.seed(seed + i)
    muscle = DummyMuscle(**params)
    muscle.attach(muscle_context(acts))
    muscle.setup()
    out = []
    for _ in range(steps):
        chosen, _data = muscle.propose_actions(sensors(0.0), acts)
        out.append([np.asarray(a.value).tolist() for a in chosen])
    return out


def test_dummy_muscle_is_reproducible_with_seeded_spaces() -> None:
    first, second = seeded_run(11), seeded_run(11)
    assert first == second
    assert seeded_run(12) != first
    # successive steps differ (the generator advances)
    assert first[0] != first[1]


def test_dummy_muscle_set_points_are_in_their_spaces() -> None:
    acts = actuators()
    muscle = DummyMuscle()
    muscle.attach(muscle_context(acts))
    chosen, data = muscle.propose_actions(sensors(0.0), acts)
    assert chosen is acts
    assert data == -1
    for actuator in chosen[:3]:
        assert actuator.contains()
    assert chosen[3].value == "unchanged"  # no space: left alone


def test_dummy_muscle_count_upwards_uses_the_update_modulo_n() -> None:
    acts = actuators()
    muscle = DummyMuscle(count_upwards=True)
    muscle.attach(muscle_context(acts))
    chosen, data = muscle.propose_actions(sensors(0.0), acts)
    assert chosen[0].value == 4  # no update yet: -1 % 5
    assert data == -1
    for update, expected in [(0, 0), (3, 3), (5, 0), (13, 3)]:
        muscle.update(update)
        chosen, data = muscle.propose_actions(sensors(0.0), acts)
        assert chosen[0].value == expected
        assert isinstance(chosen[0].value, int)
        assert data == update
        assert chosen[1].contains()  # non-Discrete actuators are still sampled
    muscle.update(None)  # ignored
    chosen, data = muscle.propose_actions(sensors(0.0), acts)
    assert chosen[0].value == 3
    assert data == 13


def test_dummy_muscle_count_upwards_stays_in_a_shifted_discrete_space() -> None:
    acts = [ActuatorInformation(None, Discrete(3, start=10), "env.0")]
    muscle = DummyMuscle(count_upwards=True)
    muscle.attach(muscle_context(acts))
    muscle.update(4)
    chosen, _ = muscle.propose_actions([], acts)
    assert chosen[0].contains()
    assert chosen[0].value == 11


def test_muscle_context_before_attach_raises() -> None:
    muscle = DummyMuscle()
    with pytest.raises(RuntimeError, match="no context"):
        _ = muscle.context
    with pytest.raises(RuntimeError):
        _ = muscle.name


def test_attach_is_the_only_way_to_set_the_muscle_context() -> None:
    muscle = DummyMuscle()
    context = muscle_context(actuators(), seed=99)
    with pytest.raises(AttributeError):
        muscle.context = context  # type: ignore[misc]
    with pytest.raises(RuntimeError):
        _ = muscle.context
    muscle.attach(context)
    assert muscle.context is context
    assert isinstance(muscle, Muscle)
    assert muscle.name == "attacker"
    assert muscle.uid == "Muscle-attacker-0"
    assert muscle.mode == "train"
    assert muscle.seed == 99
    assert muscle.rng is context.rng


def test_the_framework_sets_contexts_only_through_attach() -> None:
    """No framework module writes a plug-in's context attribute or its private storage."""
    root = Path(palaestra.__file__).parent
    owners = {
        root / "agent" / "brain.py",
        root / "agent" / "muscle.py",
        root / "environment" / "environment.py",
    }
    assignment = re.compile(r"\.context\s*=[^=]|_palaestra_context")
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path not in owners and path.relative_to(root).parts[0] != "clients"  # no framework
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if assignment.search(line)
    ]
    assert offenders == []
    process = (root / "agent" / "muscle_process.py").read_text()
    assert "muscle.attach(" in process


# --- bounds in bytes, and from the run file ---------------------------------------------------


def big_row(memory: Memory, floats: int, uid: str = "m") -> None:
    value = np.zeros(floats)
    memory.append(uid, [SensorInformation(value, None, "env.big")], [], rewards(r=1.0), False)


def test_a_byte_limit_bounds_a_memory_of_large_rows() -> None:
    memory = Memory(size_limit=1_000_000, byte_limit=10 << 20)  # 10 MiB
    for i in range(200):
        big_row(memory, 125_000, uid=f"m{i}")  # 1 MB of float64 each
    assert 8 <= len(memory) <= 10
    assert 1_000_000 <= memory.row_bytes <= 1_010_000
    assert memory.tail(1).muscle_uids == ["m199"]


def test_small_rows_are_bounded_by_rows_not_bytes() -> None:
    memory = Memory(size_limit=50, byte_limit=10 << 20)
    for i in range(300):
        row(memory, uid=f"m{i}", r=float(i))
    assert len(memory) == 50
    assert 0 < memory.row_bytes < 10_000


def test_the_estimate_follows_rows_that_grow() -> None:
    memory = Memory(size_limit=1_000_000, byte_limit=4 << 20)
    for _ in range(600):
        row(memory, r=1.0)
    assert len(memory) == 600
    for _ in range(2000):
        big_row(memory, 125_000)  # 1 MB each from now on
    assert len(memory) <= 8


def test_set_limits_drops_the_oldest_rows_at_once() -> None:
    memory = Memory()
    for i in range(20):
        row(memory, uid=f"m{i}", r=float(i))
    memory.set_limits(5)
    assert len(memory) == 5
    assert memory.tail(10).muscle_uids == [f"m{i}" for i in range(15, 20)]
    memory.set_limits(None, None)
    assert memory.size_limit == 5


def test_lists_of_numbers_count_as_python_objects() -> None:
    memory = Memory(byte_limit=1 << 30)
    memory.append("m", [SensorInformation([0.5] * 1000, None, "s")], [], [], False)
    assert 40_000 <= memory.row_bytes <= 50_000  # 8 bytes a slot and 32 a float


RUN_FILE = """\
uid: r
seed: 1
version: "0.1"
schedule:
  - p:
      environments:
        - environment: {name: palaestra.environment.dummy_environment:DummyEnvironment, uid: e}
      agents:
        - name: a
          brain: {name: palaestra.agent.dummy_brain:DummyBrain}
          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective}
          sensors: [e.0]
          actuators: [e.0]
AGENT_KEYS
      simulation: {name: palaestra.simulation:Vanilla, conditions: []}
      phase_config: {mode: train}
"""


def agent_with(keys: str) -> Any:
    from palaestra.experiment.runfile import load_run_text

    text = RUN_FILE.replace("AGENT_KEYS\n", "".join(f"          {k}\n" for k in keys.split(";")))
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    return phase.agents[0]


def test_memory_limits_default_to_bounds_that_keep_a_long_run_flat() -> None:
    from palaestra.core.description.specs import BRAIN_MEMORY, MUSCLE_MEMORY

    agent = agent_with("load: null")
    assert agent.brain_memory == BRAIN_MEMORY
    assert agent.muscle_memory == MUSCLE_MEMORY
    assert MUSCLE_MEMORY.rows <= 1000 and MUSCLE_MEMORY.bytes is not None
    assert BRAIN_MEMORY.bytes is not None and BRAIN_MEMORY.bytes <= 1 << 30


@pytest.mark.parametrize(
    ("keys", "brain", "muscle"),
    [
        ("brain_memory: {rows: 10}", (10, 256 << 20), (1000, 16 << 20)),
        ("muscle_memory: {rows: 3, bytes: 64MiB}", (100_000, 256 << 20), (3, 64 << 20)),
        (
            "brain_memory: {bytes: 1.5GB};muscle_memory: {bytes: null}",
            (100_000, 1_500_000_000),
            (1000, None),
        ),  # noqa: E501
        ("brain_memory: {bytes: 2048}", (100_000, 2048), (1000, 16 << 20)),
    ],
)
def test_memory_limits_from_the_run_file(
    keys: str, brain: tuple[int, int | None], muscle: tuple[int, int | None]
) -> None:
    agent = agent_with(keys)
    assert (agent.brain_memory.rows, agent.brain_memory.bytes) == brain
    assert (agent.muscle_memory.rows, agent.muscle_memory.bytes) == muscle


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ("brain_memory: {rows: 0}", "brain_memory.rows: expected an integer >= 1"),
        ("muscle_memory: {bytes: lots}", "muscle_memory.bytes: expected a size in bytes"),
        ("muscle_memory: {bytes: 10}", "at least 1 KiB, got 10"),
        ("brain_memory: {row: 5}", "Did you mean 'rows'?"),
        ("brain_memory: 5", "brain_memory: expected a mapping"),
    ],
)
def test_bad_memory_limits_are_refused_naming_the_key(keys: str, says: str) -> None:
    from palaestra.core.errors import EXIT_INVALID_INPUT, RunFileError

    with pytest.raises(RunFileError) as caught:
        agent_with(keys)
    assert caught.value.exit_code == EXIT_INVALID_INPUT
    assert says in caught.value.format_message()
    assert "run.yml:" in caught.value.format_message()


def test_a_transition_added_in_one_call_reads_back_as_one_appended() -> None:
    """``add_transition`` (the engine's) makes the row palaestrAI's ``append`` makes, its
    objective set on the row it returns."""
    appended, added = Memory(), Memory()
    for memory in (appended, added):
        row(memory, "m0", reward=1.0)
    appended.append(
        "m1", sensors(4.0), setpoints(2), rewards(r=0.5), True, terminated=True, truncated=False
    )
    appended.append("m1", objective=0.25)
    made = added.add_transition(
        "m1", sensors(4.0), setpoints(2), rewards(r=0.5), (True, True, False)
    )
    made.objective = 0.25
    shards = [(appended.tail(2), added.tail(2)), (appended.tail(1, "m1"), added.tail(1, "m1"))]
    for one, other in shards:
        for field in ("dones", "objective", "terminated", "truncated"):
            mine, theirs = getattr(one, field), getattr(other, field)
            assert (mine is None and theirs is None) or np.array_equal(
                mine, theirs, equal_nan=mine.dtype.kind == "f"
            ), field
        for field in ("rewards", "sensor_readings", "actuator_setpoints"):
            assert getattr(one, field).equals(getattr(other, field)), field


@pytest.mark.parametrize(
    "values",
    [[1.0], [-0.0], [0.0], [float("nan")], [float("inf")], [2.5, -1.0], [1.0, float("nan")], []],
)
def test_dummy_objective_sums_as_fsum_does(values: list[float]) -> None:
    import math

    memory = Memory()
    memory.append(
        "m0",
        sensors(1.0),
        setpoints(1),
        [RewardInformation(v, None, f"r{i}") for i, v in enumerate(values)] or rewards(none=None),
        False,
    )
    found = DummyObjective().internal_reward(memory)
    expected = math.fsum(r for r in memory.latest_rewards() if r == r)
    assert found == expected and math.copysign(1, found) == math.copysign(1, expected)


def test_a_completed_transitions_row_is_the_row_append_makes() -> None:
    """``add_transition`` sets a row's slots itself (no ``__init__`` call each game and step):
    every slot is set, as ``append`` sets it; its rewards read as the values they came as."""
    sensors = [SensorInformation(1.0, None, "s")]
    setpoints = [ActuatorInformation(1, Discrete(2), "a")]
    rewards = RewardRows(SpaceCache())([m.InfoDesc("r", None, 2.5)])
    made, appended = Memory(), Memory()
    made.add_transition("m", sensors, setpoints, rewards, (True, False, True), 0.5)
    appended.append(
        "m", sensors, setpoints, rewards, True, objective=0.5, terminated=False, truncated=True
    )
    row, expected = made._rows[0], appended._rows[0]
    slots = type(row).__slots__
    assert [getattr(row, s) for s in slots] == [getattr(expected, s) for s in slots]
    assert list(rewards) == [RewardInformation(2.5, None, "r")] and len(rewards) == 1
    assert made.latest_rewards() == [2.5]


def test_a_row_kept_as_its_values_reads_back_as_the_objects_and_keeps_a_part_set() -> None:
    """``add_values`` keeps a row as what it is made of: its newest rewards read without
    making it; its parts are made when one is read, and a part set through the muscle's
    columns before stays set (the others are made, and its rewards are read from it)."""
    space = Box(-1.0, 1.0, shape=(2,))
    parts = ValueParts(
        SensorRow([SensorInformation(None, space, "s")]), 1, SetpointRow({"a": Discrete(2)})
    )
    maker, values = RewardRows(SpaceCache()).made([m.InfoDesc("r", None, 2.5)])
    memory = Memory()
    for k in range(2):
        source = ([[0.5, -0.5 * k]], {"a": k}, maker, values)
        row = memory.add_values("m", parts, source, (k == 1, False, k == 1))
        row.objective = 0.25 * k
    first, last = memory._rows
    assert isinstance(last, MadeRow) and not first.made and not last.made
    assert memory.latest_rewards() == [2.5] and not last.made
    columns = memory.muscle_memory("m")
    assert [s.value.tolist() for s in columns.sensor_readings[0]] == [[0.5, 0.0]]
    assert first.made and not last.made
    assert [(a.uid, a.value, a.space) for a in columns.actuator_setpoints[0]] == [
        ("a", 0, Discrete(2))
    ]
    assert [(r.uid, r.value) for r in columns.rewards[0]] == [("r", 2.5)]
    assert list(columns.dones) == [False, True] and list(columns.objective) == [0.0, 0.25]
    columns.rewards[1] = [RewardInformation(-1.0, None, "r")]  # (before the row was read)
    assert last.made and memory.latest_rewards() == [-1.0]
    assert [s.value.tolist() for s in columns.sensor_readings[1]] == [[0.5, -0.5]]
    assert [a.value for a in columns.actuator_setpoints[1]] == [1]
