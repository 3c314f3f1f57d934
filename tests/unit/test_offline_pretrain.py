"""Recorded steps into a Brain's memory for ``pretrain`` (:mod:`palaestra.agent.pretrain`)."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.agent import Brain
from palaestra.agent.pretrain import pretrain
from palaestra.core.information import SensorInformation
from palaestra.core.plugin import PluginError
from palaestra.core.spaces import Box, Discrete
from palaestra.core.wire import messages as m


class Recorder(Brain):
    """Keeps what its memory held when ``pretrain`` was called."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: dict[str, list[tuple[Any, ...]]] = {}

    def pretrain(self) -> None:
        for uid in sorted(self.memory.tags):
            rows = self.memory.muscle_memory(uid)
            self.seen[uid] = [
                (
                    [s.value for s in rows.sensor_readings[i]],
                    [a.value for a in rows.actuator_setpoints[i]],
                    [r.value for r in rows.rewards[i]],
                    rows.dones[i],
                    rows.objective[i],
                )
                for i in range(len(rows))
            ]
        if self.fail:
            raise ValueError("pretraining failed")

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        return None


def row(episode: int, step: int, done: bool) -> m.MuscleActionRow:
    return m.MuscleActionRow(
        episode, step, {"e.b": [0.5], "e.a": step}, {"e.m": 1}, {"r": 1.0}, 2.0, done
    )


SENSORS = [
    SensorInformation(0, Discrete(5), "e.a"),
    SensorInformation([0.0], Box(0, 1, shape=(1,)), "e.b"),
]
STEPS = [
    m.RecordedSteps(
        source="s", worker=0, rows=[row(0, 0, False), row(0, 1, True), row(1, 0, True)]
    ),
    m.RecordedSteps(source="t", worker=1, rows=[row(0, 0, True)], repeat=2, index=1),
]


def test_each_recorded_episode_is_a_muscle_of_its_own_in_the_agents_sensor_order() -> None:
    brain = Recorder()
    own = brain.memory
    own.set_limits(2, None)
    assert pretrain(brain, STEPS, SENSORS, {"e.m": Discrete(2)}) == 5
    assert sorted(brain.seen) == [
        "pretrainer:0:0:0:0",
        "pretrainer:0:0:0:1",
        "pretrainer:1:0:1:0",
        "pretrainer:1:1:1:0",
    ]
    first = brain.seen["pretrainer:0:0:0:0"]
    assert [r[0][0] for r in first] == [0, 1]  # e.a first, as the agent lists it
    assert first[0][0][1].tolist() == [0.5]  # decoded by its space
    assert [r[1:] for r in first] == [([1], [1.0], False, 2.0), ([1], [1.0], True, 2.0)]
    assert brain.memory is own and len(own) == 0 and own.size_limit == 2  # its own, back


def test_a_failing_pretrain_is_the_plugins_error_and_the_memory_is_restored() -> None:
    brain = Recorder(fail=True)
    own = brain.memory
    with pytest.raises(PluginError, match="pretrain"):
        pretrain(brain, STEPS, SENSORS, {})
    assert brain.memory is own


def test_recorded_rewards_of_one_name_from_two_environments_are_fed_each() -> None:
    """(a row keeps rewards whose uid repeats as a list: each is given, in its order)"""
    brain = Recorder()
    both = [{"uid": "r", "value": 1.0}, {"uid": "r", "value": 0.5}]
    recorded = m.MuscleActionRow(0, 0, {"e.b": [0.5], "e.a": 0}, {"e.m": 1}, both, 1.5, True)
    steps = [m.RecordedSteps(source="s", worker=0, rows=[recorded])]
    assert pretrain(brain, steps, SENSORS, {"e.m": Discrete(2)}) == 1
    assert [row[2] for row in brain.seen["pretrainer:0:0:0:0"]] == [[1.0, 0.5]]
