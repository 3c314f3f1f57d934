"""The rows a Brain process keeps in its memory (in one process, no sockets): what a Brain
reads back, and how little of them the garbage collector has to scan."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import numpy as np
import pytest

from palaestra import testing
from palaestra.agent import dump_keeper
from palaestra.agent.brain_process import BrainProcess, Newest
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.evaluation_result import EvaluationResult
from palaestra.agent.memory import MadeRow
from palaestra.core.description.name_rules import dump_file_name
from palaestra.core.description.specs import ClassSpec
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.spaces import Box, Discrete
from palaestra.core.supervision.hotloop import Stopped
from palaestra.core.wire import messages as m
from palaestra.testing import FakeLink, RowRecorder, brain_link_of
from tests.unit.test_step_path import agent_spec

STATE = Box(-np.inf, np.inf, shape=(4,))
PUSH = Discrete(2)
REWARD = Box(0.0, 1.0, shape=())


def brain_process(brain: str = "palaestra.agent:DummyBrain") -> BrainProcess:
    agent = agent_spec("player", ["pole.state"], ["pole.push"], "palaestra.agent:DummyMuscle")
    return testing.brain_process(
        msgspec.structs.replace(agent, brain=ClassSpec(name=brain)),
        [m.InfoDesc("pole.state", STATE.to_text(), [0.0] * 4)],
        [m.InfoDesc("pole.push", PUSH.to_text(), 0)],
    )


def experiences(games: int, step: int, reward: m.InfoDesc | None = None) -> list[m.Experience]:
    """A round's experiences as a Muscle sends them."""
    return [
        m.Experience(
            worker=game,
            transition=m.Transition(
                [[0.25 * game, 0.5, -0.5, float(step)]],
                {"pole.push": game % 2},
                [reward or m.InfoDesc("pole.reward", REWARD.to_text(), 1.0)],
            ),
            data=pickle.dumps(None),
            done=False,
            episode=0,
            step=step,
            objective=0.5,
            terminated=False,
            truncated=False,
        )
        for game in range(games)
    ]


def kept(items: list[m.Experience]) -> m.KeptExperiences:
    """``items`` as a Brain takes them from the wire (encoded, and decoded as it keeps them)."""
    decoded = m.decode_kept(m.encode(m.Experiences(worker=0, items=items)))
    assert isinstance(decoded, m.KeptExperiences)
    return decoded


def round_of(games: int, step: int) -> m.KeptExperiences:
    """A round's experiences as they come over the wire (encoded and decoded)."""
    return kept(experiences(games, step))


def test_a_kept_row_reads_back_as_the_transition_it_was_made_of() -> None:
    process = brain_process()
    memory = process.brain.memory
    for item in round_of(3, 7).items:
        process._remember(memory, f"Muscle-player-{item.worker}", item, False)
    row = memory.tail(1)
    assert len(memory) == 3
    (sensor,) = row.sensor_information[0]
    assert isinstance(sensor, SensorInformation)
    assert sensor.uid == "pole.state" and sensor.space == STATE
    np.testing.assert_array_equal(sensor.value, np.array([0.5, 0.5, -0.5, 7.0], np.float32))
    (setpoint,) = row.setpoint_information[0]
    assert isinstance(setpoint, ActuatorInformation)
    assert (setpoint.uid, setpoint.value, setpoint.space) == ("pole.push", 0, PUSH)
    (reward,) = row.reward_information[0]
    assert (reward.uid, float(reward.value)) == ("pole.reward", 1.0)


def test_a_kept_row_is_a_few_objects_for_the_garbage_collector() -> None:
    """A Brain keeps up to 100,000 rows, and the collector scans each object of theirs it
    tracks as they pass through its generations (with 17 a row it took 5 of the Brain's 12
    µs a step at 64 games a worker, ``benchmarks/vector_envs.py``)."""
    process = brain_process()
    memory = process.brain.memory
    rounds = [m.encode(m.Experiences(worker=0, items=experiences(64, step))) for step in range(10)]
    gc.collect()
    tracked = len(gc.get_objects())
    for data in rounds:
        message = m.decode_kept(data)
        assert isinstance(message, m.KeptExperiences)
        for item in message.items:
            process._remember(memory, f"Muscle-player-{item.worker}", item, False)
    del message, item
    gc.collect()  # (what the rows do not hold is gone)
    per_row = (len(gc.get_objects()) - tracked) / len(memory)
    # one: the row (its transition, encoded, is a view of its message: neither is tracked)
    # (17 objects a row once, 6.5 with each part a Lazy of its own, 4 with its decoded
    # values)
    assert len(memory) == 640 and per_row <= 1.2


def test_a_rows_parts_are_made_when_first_read_with_the_sensors_it_came_under() -> None:
    """A row is one object and its encoded transition until a part is read: then its parts
    are made (and kept), with the Brain's sensors of when the row came, even if its filters
    have set others since."""
    process = brain_process()
    memory = process.brain.memory
    for step in (3, 4):  # (a memory sizes the first row as it is: not made)
        (item,) = round_of(1, step).items
        process._remember(memory, "Muscle-player-0", item, False)
    rows = memory.muscle_memory("Muscle-player-0")
    first, row = memory.tail(2)._rows
    assert isinstance(row, MadeRow) and _made(row) == [] and _made(first) == []
    process.rows.use_sensors([SensorInformation(None, Box(-1.0, 1.0, shape=(4,)), "f.state")])
    assert row.done is False and row.objective == 0.5 and _made(row) == []
    sensors = rows.sensor_readings[1]
    assert _made(row) == ["sensors", "setpoints", "rewards"] and _made(first) == []
    assert [(s.uid, s.space) for s in sensors] == [("pole.state", STATE)]
    assert [float(v) for v in sensors[0].value] == [0.0, 0.5, -0.5, 4.0]
    assert rows.sensor_readings[1] is sensors  # (made once)
    rows.actuator_setpoints[1] = []  # (set as any row's part)
    assert list(row.setpoints) == [] and rows.sensor_readings[1] is sensors
    copied = pickle.loads(pickle.dumps(first))  # (a pickle makes the parts)
    assert [(r.uid, float(r.value)) for r in copied.rewards] == [("pole.reward", 1.0)]
    assert [a.value for a in copied.setpoints] == [0]
    with pytest.raises(AttributeError, match="no attribute 'other'"):
        row.other  # noqa: B018


def _made(row: MadeRow) -> list[str]:
    """The parts of ``row`` made so far (``object.__getattribute__`` does not make them)."""
    made = []
    for name in ("sensors", "setpoints", "rewards"):
        try:
            object.__getattribute__(row, name)
        except AttributeError:
            continue
        made.append(name)
    return made


def test_rows_of_other_rewards_read_back_with_their_own() -> None:
    """Rows are built when read with what described their rewards when they came: a reward
    with another uid or space than the last row's makes its own."""
    process = brain_process()
    memory = process.brain.memory
    other = Box(-5.0, 5.0, shape=())
    for uid, space in (("pole.reward", REWARD), ("pole.cost", REWARD), ("pole.cost", other)):
        (item,) = kept(experiences(1, 0, m.InfoDesc(uid, space.to_text(), 0.5))).items
        process._remember(memory, "Muscle-player-0", item, False)
    rows = [rewards[0] for rewards in memory.tail(3).reward_information]
    assert [(r.uid, r.space, float(r.value)) for r in rows] == [
        ("pole.reward", REWARD, 0.5),
        ("pole.cost", REWARD, 0.5),
        ("pole.cost", other, 0.5),
    ]


class CountingBrain(DummyBrain):
    """Adds the number of its ``thinking`` calls as a statistic each time."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        update = super().thinking(muscle_id, data_from_muscle)
        self.add_statistics("calls", self.thinking_calls)
        return update


@pytest.mark.parametrize("done", [False, True])
def test_a_rounds_statistics_are_stored_after_its_answer_unless_its_episode_ended(
    done: bool,
) -> None:
    """Off the chain of a step: the statistics of the thinking about a round are stored after
    the Muscle has the Brain's answer; those of a round that ends an episode before it (they
    leave with the end, as the Muscle's rows do)."""
    process = brain_process("tests.unit.test_brain_rows:CountingBrain")
    stored = RowRecorder("statistics")
    process.out.statistics = stored
    at_answer: list[int] = []
    link = FakeLink("Muscle-player-0", lambda message: at_answer.append(len(stored.recorded)))
    (item,) = round_of(1, 3).items
    message = m.KeptExperiences(worker=0, items=[msgspec.structs.replace(item, done=done)])
    process._think_games(link, process.brain.memory, message)
    assert at_answer == [1 if done else 0]
    assert [row.step for row in stored.recorded] == [3]


def test_a_round_that_ends_episodes_is_answered_before_its_dumps_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dumps a round's episode ends made are written and sent once the Muscle has its
    answer (the file's system calls are no wait of the Muscle's); the store gets each, the file
    (one name for the games' dumps) the newest, written before any leaves for the store."""
    process = brain_process()
    process.dumps.setup = msgspec.structs.replace(process.request, dump_dir=str(tmp_path))
    path = tmp_path / dump_file_name("player", "")
    sent: list[tuple[m.BrainDump, bytes]] = []
    monkeypatch.setattr(
        dump_keeper, "send", lambda store, dump, block: sent.append((dump, path.read_bytes()))
    )
    at_answer: list[bool] = []
    link = FakeLink("Muscle-player-0", lambda message: at_answer.append(path.exists()))
    items = [msgspec.structs.replace(item, done=item.worker != 1) for item in round_of(3, 9).items]
    process.handle(link, m.KeptExperiences(worker=0, items=items))
    assert at_answer == [False]
    assert [json.loads(dump.dump)["thinking_calls"] for dump, _ in sent] == [1, 3]
    assert [file for _, file in sent] == [sent[-1][0].dump] * 2
    assert {dump.path for dump, _ in sent} == {str(path)}


def test_a_brain_whose_last_dump_fails_at_the_phases_end_still_writes_the_file_it_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The phase's end dumps once more; where that fails, the dumps the Brain process kept
    still go out: the file it held (within a second of the last write) is written."""
    process = brain_process()
    process.dumps.setup = msgspec.structs.replace(process.request, dump_dir=str(tmp_path))
    path = tmp_path / dump_file_name("player", "")
    for data in (b"written", b"held"):
        process.dumps.write(data, "")
        process.dumps.send(None, last=False)
    assert path.read_bytes() == b"written"
    process.dumps.stored = False  # (it learned since: a last dump is due)

    def stopped(hot: Any, listener: Any) -> None:
        raise Stopped

    def failing_store() -> None:
        raise RuntimeError("no last dump")

    monkeypatch.setattr(process, "_answer", stopped)
    monkeypatch.setattr(process.brain, "store", failing_store)
    with pytest.raises(PluginError, match="store"):
        process._serve(SimpleNamespace(own=lambda listener: None), None)  # type: ignore[arg-type]
    assert path.read_bytes() == b"held"


class NowAndThenBrain(DummyBrain):
    """Adds a statistic when thinking about game 1's experience, records a value at game 2's,
    and adds nothing else."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if muscle_id.endswith("-1"):
            self.add_statistics("seen", 1)
        elif muscle_id.endswith("-2"):
            self.context.record("note", "two")
        return super().thinking(muscle_id, data_from_muscle)


def test_what_a_brain_adds_in_a_round_is_stored_under_the_game_it_thought_about() -> None:
    """A round's thinking stores a game's statistics and records under that game, whichever
    games of the round add them (those of the others add nothing)."""
    process = brain_process("tests.unit.test_brain_rows:NowAndThenBrain")
    statistics, records = RowRecorder("statistics"), RowRecorder("plugin_records")
    process.out.statistics, process.out.records = statistics, records
    link = FakeLink("Muscle-player-0", lambda message: None)
    for _ in range(2):
        process._think_games(link, process.brain.memory, round_of(4, 5))
    assert [(row.worker, row.values) for row in statistics.recorded] == [(1, {"seen": 1})] * 2
    assert [row.worker for row in records.recorded] == [2, 2]


class FailingBrain(DummyBrain):
    """Fails when thinking about game 2's experience."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if muscle_id.endswith("-2"):
            raise ZeroDivisionError("no room to think")
        return super().thinking(muscle_id, data_from_muscle)


def test_a_brain_failing_in_a_round_is_named_with_its_method() -> None:
    process = brain_process("tests.unit.test_brain_rows:FailingBrain")
    link = FakeLink("Muscle-player-0", lambda message: None)
    with pytest.raises(PluginError, match=r"FailingBrain\.thinking") as failed:
        process._think_games(link, process.brain.memory, round_of(4, 5))
    assert isinstance(failed.value.__cause__, ZeroDivisionError)
    assert process.brain.thinking_calls == 2  # (games 0 and 1 thought about)


def test_the_newest_update_is_pickled_again_unless_it_equals_the_last_plain_one() -> None:
    """An int, str or bytes update equal to the last one (of its type) sends the pickle kept;
    any other update is pickled anew, and each Muscle gets the newest once."""
    newest = Newest()
    brain = DummyBrain()
    first = newest.deliver(brain, "a", 0)
    assert newest.deliver(brain, "a", 0) is first  # (the same int: the same pickle)
    assert pickle.loads(newest.deliver(brain, "a", False)) is False  # (== 0, not an int)
    assert pickle.loads(newest.deliver(brain, "a", 0)) == 0
    array = np.zeros(3)
    sent = newest.deliver(brain, "a", array)  # (no comparison of arrays: never kept as plain)
    assert np.array_equal(pickle.loads(sent), array)
    assert newest.deliver(brain, "a", array) is not sent
    assert pickle.loads(newest.deliver(brain, "a", -0.0)) == 0.0
    assert str(pickle.loads(newest.deliver(brain, "a", 0.0))) == "0.0"  # (not -0.0's pickle)
    assert newest.deliver(brain, "b", None) is not None  # b has not had the newest
    assert newest.deliver(brain, "b", None) is None  # now it has


def test_what_a_muscle_sent_reaches_thinking_as_it_sent_it() -> None:
    """A Muscle's None travels as None (no pickle to make or load), anything else pickled."""
    process = brain_process()
    memory = process.brain.memory
    (item,) = experiences(1, 3)
    for data, expected in ((None, None), (pickle.dumps({"q": [1.5]}), {"q": [1.5]})):
        sent = kept([msgspec.structs.replace(item, data=data)])
        assert process._remember(memory, "Muscle-player-0", sent.items[0], False) == expected


class BareMetricsBrain(DummyBrain):
    """Returns an EvaluationResult whose ``metrics`` is a bare number, not a mapping."""

    def evaluate_rollouts(self, *args: Any, **kwargs: Any) -> EvaluationResult:
        return EvaluationResult(metrics=0.5)  # type: ignore[arg-type]


def test_evaluation_metrics_that_are_no_mapping_name_evaluate_rollouts() -> None:
    """They failed the run as palaestra's own TypeError ("'float' object is not iterable"),
    with its traceback, naming neither the Brain's class nor evaluate_rollouts."""
    process = brain_process(f"{__name__}:BareMetricsBrain")
    with pytest.raises(PluginContractError) as caught:
        brain_link_of(process).send(m.encode(m.AgentEvaluate(evaluation=0)))
    assert str(caught.value).startswith(
        f"{__name__}:BareMetricsBrain.evaluate_rollouts returned an EvaluationResult whose "
        "metrics are float 0.5: expected a mapping of names to numbers"
    )


class JudgingBrain(DummyBrain):
    """Adds a statistic in ``evaluate_rollouts``."""

    def evaluate_rollouts(self, *args: Any, **kwargs: Any) -> EvaluationResult:
        self.add_statistics("judged", kwargs["episode"])
        return EvaluationResult(metrics={"reward": 1.0})


def test_what_evaluate_rollouts_adds_is_stored_where_the_rollouts_ended() -> None:
    """It was stored at worker, episode and step -1, where the evaluation message names
    the end of the worker's rollout."""
    process = brain_process(f"{__name__}:JudgingBrain")
    stored = RowRecorder("statistics")
    process.out.statistics = stored
    evaluate = m.AgentEvaluate(evaluation=2, worker=0, episode=5, step=9)
    brain_link_of(process).send(m.encode(evaluate))
    assert [(r.worker, r.episode, r.step, r.values) for r in stored.recorded] == [
        (0, 5, 9, {"judged": 2})
    ]
