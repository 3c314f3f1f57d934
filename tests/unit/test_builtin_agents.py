"""palaestrAI's agent built-ins in palaestra: NoneBrain, AggregateRewardsObjective and the
CheckpointableBrain protocol, on the values palaestrAI 3.5.18's own classes give."""

from __future__ import annotations

import numpy as np
import pytest

from palaestra.agent import (
    AggregateRewardsObjective,
    Brain,
    CheckpointableBrain,
    NoneBrain,
)
from palaestra.agent.memory import Memory
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box


def _memory(steps: int = 3) -> Memory:
    memory = Memory()
    for step in range(steps):
        memory.append(
            "m1",
            [SensorInformation(1.0, Box(0, 10, shape=()), "s")],
            [ActuatorInformation(1.0, Box(0, 10, shape=()), "a")],
            [
                RewardInformation(np.array(step + 1.0), Box(0, 10, shape=()), "r1"),
                RewardInformation(np.array(2.0 * step), Box(0, 10, shape=()), "r2"),
            ],
            False,
        )
    return memory


# palaestrAI 3.5.18: AggregateRewardsObjective(["r1", "r2"], aggregation, 0.5) on this memory
@pytest.mark.parametrize(
    ("aggregation", "expected"), [("sum", 3.5), ("min", 1.5), ("max", 2.0), ("mean", 1.75)]
)
def test_aggregate_rewards_objective_gives_palaestrais_values(
    aggregation: str, expected: float
) -> None:
    memory = _memory()
    objective = AggregateRewardsObjective(["r1", "r2"], aggregation, 0.5)
    assert objective.internal_reward(memory) == expected
    assert len(memory) == 1  # as palaestrAI's, it keeps only the newest row


def test_aggregate_rewards_objective_takes_one_reward_uid() -> None:
    assert AggregateRewardsObjective("r2").internal_reward(_memory()) == 4.0
    assert AggregateRewardsObjective(rewards="r1", factor=-2).internal_reward(_memory()) == -6.0


def test_aggregate_rewards_objective_counts_each_reward_of_a_uid() -> None:
    """Two environments of a phase that name a reward alike give a step two rewards of one
    uid; the objective kept the last (as palaestrAI's, whose memory keeps both, it counts
    each)."""
    memory = Memory()
    memory.append(
        "m1",
        [SensorInformation(1.0, Box(0, 10, shape=()), "s")],
        [ActuatorInformation(1.0, Box(0, 10, shape=()), "a")],
        [
            RewardInformation(np.array(1.0), Box(0, 10, shape=()), "reward"),
            RewardInformation(np.array(3.0), Box(0, 10, shape=()), "reward"),
        ],
        False,
    )
    assert AggregateRewardsObjective("reward").internal_reward(memory) == 4.0
    assert AggregateRewardsObjective("reward", "min").internal_reward(memory) == 1.0


def test_aggregate_rewards_objective_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="aggregation 'median' is not one of sum, min"):
        AggregateRewardsObjective("r1", "median")
    with pytest.raises(TypeError, match="rewards must be a reward uid"):
        AggregateRewardsObjective(3)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="no reward 'r9' in the newest step"):
        AggregateRewardsObjective(["r1", "r9"]).internal_reward(_memory())
    with pytest.raises(KeyError, match="it has none"):
        AggregateRewardsObjective("r1").internal_reward(Memory())


def test_none_brain_answers_nothing_and_keeps_nothing() -> None:
    brain = NoneBrain(anything=1)
    assert isinstance(brain, Brain)
    assert brain.thinking("m1", {"x": 1}) is None
    brain.store()
    brain.load()


def test_checkpointable_brain_is_a_runtime_protocol() -> None:
    class Exporting(NoneBrain):
        CHECKPOINT_FORMAT = "mine"
        CHECKPOINT_SCHEMA_VERSION = 1

        def export_checkpoint_state(self) -> bytes:
            return b"state"

        def restore_checkpoint_state(self, payload: bytes) -> None:
            pass

    assert isinstance(Exporting(), CheckpointableBrain)
    assert not isinstance(NoneBrain(), CheckpointableBrain)


def test_objective_stop_reaches_a_rule_on_the_mean_of_the_last_values() -> None:
    from palaestra.agent.objective_stop import ObjectiveStop

    stop = ObjectiveStop({2: 3.5, 4: 10.0})
    assert [stop.reached(v) for v in (1.0, 2.0, 3.0, 4.0, 1.0, float("nan"), 9.0)] == [
        False,  # fewer values than any window
        False,
        False,
        True,  # (3 + 4) / 2
        False,
        False,  # NaN reaches nothing
        False,
    ]
    assert ObjectiveStop({1: 5.0}).reached(5.0)
