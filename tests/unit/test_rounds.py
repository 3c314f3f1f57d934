"""The per-round engine in one process, for any number of games: a worker's games played in
rounds by the real environment and Muscle processes' code (:class:`palaestra.testing.
LocalRounds`), no process or socket. N games of one worker write, game by game and agent by
agent, what N workers of one game write, under every order of turns."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import msgspec
import numpy as np
import pytest

from palaestra.agent.brain_link import BrainLink
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.memory import MadeRow
from palaestra.agent.muscle_lanes import MuscleLanes
from palaestra.agent.muscle_process import MuscleProcess
from palaestra.agent.muscle_schema import COLUMN_CHECK
from palaestra.core.description.config import GROUPS_VAR
from palaestra.core.description.specs import AgentSpec, ClassSpec, EnvironmentSpec
from palaestra.core.nonfinite import json_text
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.rounds import groups_of
from palaestra.core.supervision.hotloop import Stopped
from palaestra.core.turns import Game, TurnPolicy
from palaestra.core.wire import messages as m
from palaestra.environment.environment_process import EnvironmentProcess
from palaestra.testing import FakeLink, LocalRounds, RowRecorder, brain_link
from tests.plugins.games import ColumnMuscle, RoundObjective

CARTPOLE = "tests.plugins.games:PerGameCartPole"  # (stepped game by game)
ROUND_OBJECTIVE = "tests.plugins.games:RoundObjective"
STEP_OBJECTIVE = "tests.plugins.games:StepObjective"
SEEDS = (11, 12, 13)
TURNS = {
    "AllAct": "palaestra.core.turns:AllAct",
    "RoundRobin": "palaestra.core.turns:RoundRobin",
    "custom": "tests.plugins.games:EveryThirdStepBoth",
    "nobody-on-odd-steps": "tests.plugins.games:EvenStepsOnly",
}


def agent(
    name: str, weights: list[float], objective: str = "palaestra.agent:DummyObjective"
) -> AgentSpec:
    return AgentSpec(
        name=name,
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name="tests.plugins.games:LinearMuscle", params={"weights": weights}),
        objective=ClassSpec(name=objective),
        sensors=("pole.state",),
        actuators=("pole.push",),
    )


AGENTS = [agent("one", [0.0, 0.0, 1.0, 1.0]), agent("two", [0.0, 0.5, 1.0, -0.5])]


def play(
    worker: int,
    seeds: tuple[int, ...],
    policy: str,
    episodes: int,
    sink: type[RowRecorder] = RowRecorder,
    update_lag: int = 0,
    agents: list[AgentSpec] = AGENTS,
    environment: str = CARTPOLE,
    stored: bool = False,
) -> LocalRounds:
    """Play the worker's games (one per seed) to their end in this process (each Muscle's
    rows into a ``sink``)."""
    env = EnvironmentProcess(
        f"Environment-pole-{worker}",
        environment=EnvironmentSpec(name=environment, uid="pole", params={"max_steps": 15}),
        environment_id=1,
        worker=worker,
        seed=seeds[0],
        store_endpoint=None,
        lane_seeds=seeds if len(seeds) > 1 else (),
    )
    for game in env.games:
        game.out.rows = RowRecorder("world_states")
        if stored:  # (a batch of games shapes its rows only for a store)
            game.out.rows.socket = STORED  # type: ignore[assignment]
    rounds = LocalRounds(env)
    baseline = rounds.start()
    by_uid = {d.uid: d for d in [*baseline.sensors, *baseline.actuators]}
    for spec in agents:
        muscle = MuscleProcess(
            f"Muscle-{spec.name}-{worker}",
            agent=spec,
            agent_id=1,
            worker=worker,
            mode="train",
            seed=3,
            brain_endpoint="",
            store_endpoint=None,
            sensors=[by_uid["pole.state"]],
            actuators=[by_uid["pole.push"]],
            update_lag=update_lag,
        )
        muscle.out.rows = sink("muscle_actions")
        rounds.wire(muscle, brain_link(DummyBrain(), f"{spec.name}-{worker}"))
    done = rounds.play(episodes, TURNS[policy])
    assert done.steps == sum(len(game.out.rows.recorded) for game in env.games)
    return rounds


STORED = object()
"""The socket of a game's row sink that stores (:class:`RowRecorder` sends nothing)."""


def world(rounds: LocalRounds) -> dict[int, list[tuple[Any, ...]]]:
    """Each game's world_states rows (by its lane)."""
    return {
        game.worker: [
            (r.episode, r.step, r.sensors, r.setpoints, r.rewards, r.done)
            for r in game.out.rows.recorded
        ]
        for game in rounds.environment.games
    }


def actions(rounds: LocalRounds) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    """Each agent's muscle_actions rows, by agent and lane."""
    found: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    for name, muscle in rounds.muscles.items():
        assert isinstance(muscle.out.rows, RowRecorder)
        for row in muscle.out.rows.recorded:
            found.setdefault((name.split("-")[1], row["worker"]), []).append(
                (
                    row["episode"],
                    row["step"],
                    json.loads(row["sensor_readings"]),
                    json.loads(row["actuator_setpoints"]),
                    row["objective"],
                    row["done"],
                )
            )
    return found


def ended(rounds: LocalRounds) -> list[tuple[int, int, int]]:
    return sorted(
        (e.worker, e.episode, e.steps) for e in rounds.told if isinstance(e, m.LaneEpisodeDone)
    )


@pytest.mark.parametrize("policy", list(TURNS)[:3])
def test_games_of_one_worker_write_what_workers_of_one_game_write(policy: str) -> None:
    together = play(0, SEEDS, policy, episodes=2)
    alone = [play(w, (seed,), policy, episodes=2) for w, seed in enumerate(SEEDS)]
    assert world(together) == {w: rows for one in alone for w, rows in world(one).items()}
    expected = {key: rows for one in alone for key, rows in actions(one).items()}
    assert actions(together) == expected
    assert {agent for agent, _ in expected} == {"one", "two"}
    assert ended(together) == sorted(e for one in alone for e in ended(one))
    assert [(w, e) for w, e, _ in ended(together)] == [(w, e) for w in range(3) for e in (0, 1)]


def test_a_game_ends_its_episode_before_the_next_begins() -> None:
    """Every agent sees an episode's end (its last rows are written) before its game resets:
    the round that tells the end holds no observation of the game's next episode."""
    rounds = play(0, SEEDS, "AllAct", episodes=2)
    link = rounds.environment.links["Muscle-one-0"]
    assert isinstance(link.sent[-1], m.AgentSteps) and link.sent[-1].last
    for message in link.sent:
        assert isinstance(message, m.AgentSteps)
        ending = {
            lane for lane, step in zip(message.lanes, message.steps, strict=True) if step.done
        }
        assert not ending & {
            lane for lane, step in zip(message.lanes, message.steps, strict=True) if not step.done
        }
    rows = actions(rounds)
    for lane in range(3):
        done = [row for row in rows[("one", lane)] if row[5]]
        assert [row[0] for row in done] == [0, 1]  # each episode's last transition, stored


def test_a_step_in_which_no_agent_acts_is_taken() -> None:
    """An order of turns in which nobody acts on some steps: the games step on them (with the
    actuators' defaults) and every game ends its episodes, as under the controller."""
    rounds = play(0, SEEDS, "nobody-on-odd-steps", episodes=2)
    assert [(w, e) for w, e, _ in ended(rounds)] == [(w, e) for w in range(3) for e in (0, 1)]
    for game, rows in world(rounds).items():  # (row k: the step taken on step k - 1)
        for episode in (0, 1):
            steps = [row[1] for row in rows if row[0] == episode]
            assert steps == list(range(1, len(steps) + 1)) and len(steps) > 2, game
        assert all(row[3] == {} for row in rows if row[1] % 2 == 0), game
        assert all(row[3] for row in rows if row[1] % 2 == 1), game


class Flushes(RowRecorder):
    """Notes how many rows it held at each flush (when a row sink pushes them)."""

    def __init__(self, table: str = "") -> None:
        super().__init__(table)
        self.flushed: list[int] = []

    def flush(self) -> None:
        self.flushed.append(len(self.recorded))


def watch_answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int, bool]]:
    """At each Muscle's answer to a round that ends an episode: the Muscle, how many ends its
    rounds told it, how many rows of an ended episode (done) it has, whether it pushed them."""
    at_ends: list[tuple[str, int, int, bool]] = []
    told: dict[str, int] = {}
    answer = MuscleLanes.answer

    def watched(lanes: MuscleLanes, message: m.AgentSteps, send: Any = None) -> m.LaneActions:
        ends = sum(step.done for step in message.steps)
        if not ends:
            return answer(lanes, message, send)
        process = lanes.process

        def sent(reply: m.LaneActions) -> None:
            if send is not None:
                send(reply)
            told[process.name] = told.get(process.name, 0) + ends
            sink = process.out.rows
            assert isinstance(sink, Flushes)
            done = sum(1 for row in sink.recorded if row["done"])
            pushed = bool(sink.flushed) and sink.flushed[-1] == len(sink.recorded)
            at_ends.append((process.name, told[process.name], done, pushed))

        return answer(lanes, message, sent)

    monkeypatch.setattr(MuscleLanes, "answer", watched)
    return at_ends


@pytest.mark.parametrize(("games", "update_lag"), [(1, 0), (3, 0), (1, 1), (3, 1)])
def test_a_muscle_pushes_an_episodes_last_rows_with_its_end(
    games: int, update_lag: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Muscle's rows of an episode leave it when the episode ends (not only when the phase
    does), before it answers the round that told it of the end (the environment tells its
    controller of the end once its agents answered): a run killed mid-phase keeps every
    episode its rows were told of. With update_lag 1 too, where the Muscle answers before it
    completes the transitions of a round in which its games go on."""
    at_ends = watch_answers(monkeypatch)
    rounds = play(0, SEEDS[:games], "AllAct", episodes=2, sink=Flushes, update_lag=update_lag)
    assert len(at_ends) >= 2 * len(rounds.muscles)  # (several games may end in one round)
    for name, told, done, pushed in at_ends:
        assert (done, pushed) == (told, True), (name, told, done, pushed)
    for muscle in rounds.muscles.values():
        sink = muscle.out.rows
        assert isinstance(sink, Flushes)
        ends = [i + 1 for i, row in enumerate(sink.recorded) if row["done"]]
        assert len(ends) == 2 * games
        # pushed with the round that holds the end (a round has a row per game at most)
        assert all(any(e <= f < e + games for f in sink.flushed) for e in ends), sink.flushed


def objective_agents(objective: str) -> list[AgentSpec]:
    return [agent(spec.name, [0.0, 0.0, 1.0, 1.0], objective) for spec in AGENTS]


def test_an_objective_takes_a_rounds_memories_in_one_call() -> None:
    """An Objective that overrides ``internal_rewards`` is called once per round with the
    memories of the games whose step completed; its values are those its ``internal_reward``
    gives game by game."""
    RoundObjective.calls.clear()
    rounds = play(0, SEEDS, "AllAct", 2, agents=objective_agents(ROUND_OBJECTIVE))
    calls = list(RoundObjective.calls)
    each = play(0, SEEDS, "AllAct", 2, agents=objective_agents(STEP_OBJECTIVE))
    assert actions(rounds) == actions(each)
    objectives = [row[4] for rows in actions(rounds).values() for row in rows]
    assert len(set(objectives)) > 10  # (they differ from game to game and step to step)
    assert max(calls) == len(SEEDS) and sum(calls) == len(objectives)
    assert len(calls) < len(objectives)


def test_an_objective_answering_a_round_with_too_few_values_is_named() -> None:
    with pytest.raises(PluginContractError, match="internal_rewards.*one value per memory"):
        play(0, SEEDS, "AllAct", 1, agents=objective_agents("tests.plugins.games:ShortObjective"))


def test_a_steps_rows_are_made_while_the_next_link_works(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off the chain of a step: the environment records a step after it sent the step's
    observations, and the Muscle shapes the rows of a round's transitions after telling its
    Brain about them (update_lag 0); every row is there in the end."""
    events: list[tuple[str, int]] = []
    answer, tell = MuscleLanes.answer, BrainLink.tell
    add, add_shaped = RowRecorder.add, RowRecorder.add_shaped

    def answered(lanes: MuscleLanes, message: m.AgentSteps, send: Any = None) -> m.LaneActions:
        events.extend(("observed", step.step) for step in message.steps)
        return answer(lanes, message, send)

    def told(link: BrainLink, data: bytes) -> None:
        message = m.decode(data)
        assert isinstance(message, m.Experiences)
        events.extend(("told", item.step) for item in message.items if item.transition)
        tell(link, data)

    def world_row(sink: RowRecorder, row: Any) -> None:
        events.append(("world row", row.step))
        add(sink, row)

    def muscle_rows(sink: RowRecorder, rows: list[tuple[Any, ...]], size: int) -> None:
        events.extend(("muscle row", row[3]) for row in rows)
        add_shaped(sink, rows, size)

    monkeypatch.setattr(MuscleLanes, "answer", answered)
    monkeypatch.setattr(BrainLink, "tell", told)
    monkeypatch.setattr(RowRecorder, "add", world_row)
    monkeypatch.setattr(RowRecorder, "add_shaped", muscle_rows)
    play(0, SEEDS[:1], "AllAct", episodes=1, agents=AGENTS[:1])
    order = {event: k for k, event in enumerate(events)}
    steps = [step for kind, step in events if kind == "world row"]
    assert len(steps) > 3 and steps == list(range(1, len(steps) + 1))
    for step in steps:  # (the observation of step s follows its s-th world step)
        assert order[("observed", step)] < order[("world row", step)], step
    # (a transition's row has the step it acted on, the Brain is told the step completing it)
    transitions = [step for kind, step in events if kind == "muscle row"]
    assert transitions == [step - 1 for kind, step in events if kind == "told"]
    for step in transitions:
        assert order[("told", step + 1)] < order[("muscle row", step)], step


@pytest.mark.parametrize(("games", "groups"), [(1, "1"), (3, "1"), (8, "2")])
def test_a_rounds_rows_are_made_once_its_message_is_out(
    games: int, groups: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment makes a round's world_states rows (a batch of games too, in one group
    or two) once the round's observations are sent and before its games step again, and a
    Muscle its muscle_actions rows once its answer is sent (update_lag 0), while the other
    side works; but in a round that ends an episode the Muscle makes them before it answers
    (they leave with the end)."""
    monkeypatch.setenv(GROUPS_VAR, groups)
    events: list[tuple[Any, ...]] = []
    answer, add, add_shaped = MuscleLanes.answer, RowRecorder.add, RowRecorder.add_shaped

    def answered(lanes: MuscleLanes, message: m.AgentSteps, send: Any = None) -> m.LaneActions:
        events.extend(
            ("observed", lane, episode, step.step)
            for lane, episode, step in zip(
                message.lanes, message.episodes, message.steps, strict=True
            )
        )
        events.append(("round", any(step.done for step in message.steps)))

        def sent(reply: m.LaneActions) -> None:
            events.append(("answered",))
            if send is not None:
                send(reply)

        return answer(lanes, message, sent)

    def world_row(sink: RowRecorder, row: Any) -> None:
        events.append(("world row", 0, row.episode, row.step))
        add(sink, row)

    def shaped(sink: RowRecorder, rows: list[tuple[Any, ...]], size: int) -> None:
        if sink.table == "muscle_actions":
            events.append(("muscle rows",))
        else:  # (a batch's, by lane)
            events.extend(("world row", row[1], row[2], row[3]) for row in rows)
        add_shaped(sink, rows, size)

    monkeypatch.setattr(MuscleLanes, "answer", answered)
    monkeypatch.setattr(RowRecorder, "add", world_row)
    monkeypatch.setattr(RowRecorder, "add_shaped", shaped)
    seeds = tuple(range(11, 11 + games))
    environment = "palaestra.environment.cartpole:CartPole"  # (several: one batch)
    rounds = play(0, seeds, "AllAct", 2, agents=AGENTS[:1], environment=environment, stored=True)
    assert (rounds.environment.batch is not None) == (games > 1)
    order = {event: k for k, event in enumerate(events)}
    noted = [event for event in events if event[0] in ("observed", "world row")]
    assert len(set(noted)) == len(noted)  # (each observation and row once)
    rows = [event for event in events if event[0] == "world row"]
    assert {(lane, episode) for _, lane, episode, _ in rows} == {
        (lane, episode) for lane in range(games) for episode in range(2)
    }
    for _, lane, episode, step in rows:  # (step s of a game is its observation s)
        row = order[("world row", lane, episode, step)]
        assert order[("observed", lane, episode, step)] < row, (lane, episode, step)
        following = order.get(("observed", lane, episode, step + 1))  # (its next step's)
        assert following is None or row < following, (lane, episode, step)
    rounds_at = [k for k, event in enumerate(events) if event[0] == "round"] + [len(events)]
    seen = set()
    for start, end in itertools.pairwise(rounds_at):
        kinds = [event[0] for event in events[start:end]]
        if "muscle rows" in kinds:
            ends = events[start][1]
            made_first = kinds.index("muscle rows") < kinds.index("answered")
            assert made_first == ends, (start, kinds)
            seen.add(ends)
    assert seen == {True, False}


@pytest.mark.parametrize("environment", [CARTPOLE, "palaestra.environment.cartpole:CartPole"])
def test_an_environment_the_controller_steps_makes_the_rows_once_its_answer_is_out(
    environment: str,
) -> None:
    """Stepped by the simulation controller (one ``EnvRound`` a round), the environment makes
    the round's world_states rows after it sent ``EnvRoundDone`` (game by game, or a batch);
    an answer that cannot be sent keeps them."""
    env = EnvironmentProcess(
        "Environment-pole-0",
        environment=EnvironmentSpec(name=environment, uid="pole", params={"max_steps": 15}),
        environment_id=1,
        worker=0,
        seed=SEEDS[0],
        store_endpoint=None,
        lane_seeds=SEEDS,
    )
    events: list[str] = []
    for game in env.games:
        game.out.rows = Noted("world_states", events)
        game.out.rows.socket = STORED  # type: ignore[assignment]
    LocalRounds(env).start()
    assert (env.batch is not None) == (environment != CARTPOLE)
    link = Answers("SimulationController-0", events)
    round_of = m.EnvRound(games=[0, 1, 2], setpoints=[{"push": 1}] * 3, stop=[False] * 3)
    link.put(round_of)
    env._from_link(link)
    assert events == ["answered", "row", "row", "row"]
    assert isinstance(link.sent[-1], m.EnvRoundDone) and len(link.sent[-1].states) == 3
    link.fails = True
    link.put(round_of)
    with pytest.raises(RuntimeError, match="the link broke"):
        env._from_link(link)
    assert events[4:] == ["row", "row", "row"]


class Noted(RowRecorder):
    """A row recorder that notes each row it takes (``row``) in ``events``."""

    def __init__(self, table: str, events: list[str]) -> None:
        super().__init__(table)
        self.events = events

    def add(self, row: Any) -> None:
        self.events.append("row")
        super().add(row)

    def add_shaped(self, rows: list[tuple[Any, ...]], size: int) -> None:
        self.events.extend("row" for _ in rows)
        super().add_shaped(rows, size)


class Answers(FakeLink):
    """The controller's link: notes each answer sent (``answered``), or (``fails``) breaks."""

    def __init__(self, peer: str, events: list[str]) -> None:
        super().__init__(peer)
        self.events = events
        self.fails = False

    def send(self, data: bytes) -> None:
        if self.fails:
            raise RuntimeError("the link broke")
        self.events.append("answered")
        super().send(data)


@pytest.mark.parametrize(
    ("seeds", "completed"),
    [(SEEDS[:1], [(0, 0), (0, 1), (0, 2), (0, 3)]), (SEEDS, [(0, 0), (1, 0), (2, 0)])],
)
def test_a_muscle_that_fails_to_act_keeps_the_rows_of_the_transitions_it_completed(
    seeds: tuple[int, ...], completed: list[tuple[int, int]]
) -> None:
    """A Muscle makes a round's rows once its answer is out; one whose ``propose_actions``
    (called for each game) fails on its fifth call completed the transitions of the steps it
    acted on before (the round's observations complete them before it acts): their rows are
    kept. One game: four steps acted on; three: the first step of each."""
    failing = AgentSpec(
        name="one",
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name="tests.plugins.row_probes:FailAtStepMuscle", params={"at": 5}),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=("pole.state",),
        actuators=("pole.push",),
    )
    rows: list[Any] = []
    with pytest.raises(PluginError, match="FailAtStepMuscle.propose_actions"):
        play(0, seeds, "AllAct", 1, agents=[failing], sink=lambda table: Kept(table, rows))
    assert sorted((row["worker"], row["step"]) for row in rows) == completed


class Kept(RowRecorder):
    """A row recorder whose rows outlive a play that failed (in ``rows``)."""

    def __init__(self, table: str, rows: list[Any]) -> None:
        super().__init__(table)
        self.recorded = rows


@pytest.mark.parametrize("games", [1, 3])
@pytest.mark.parametrize("stop", [Stopped, RuntimeError])
def test_a_stop_or_a_failure_keeps_the_rows_of_the_steps_taken(
    stop: type[BaseException], games: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop request (or a failure) that interrupts the rounds while a step's rows are held
    (its observations being sent) keeps those rows: a game's, or a batch's."""
    answer = MuscleLanes.answer

    def stopped(lanes: MuscleLanes, message: m.AgentSteps, send: Any = None) -> m.LaneActions:
        if message.steps and message.steps[0].step == 5:
            raise stop
        return answer(lanes, message, send)

    monkeypatch.setattr(MuscleLanes, "answer", stopped)
    steps: list[tuple[int, int]] = []
    monkeypatch.setattr(RowRecorder, "add", lambda sink, row: steps.append((0, row.step)))
    shaped = RowRecorder.add_shaped

    def batch_rows(sink: RowRecorder, rows: list[tuple[Any, ...]], size: int) -> None:
        if sink.table == "world_states":
            steps.extend((row[1], row[3]) for row in rows)
        shaped(sink, rows, size)

    monkeypatch.setattr(RowRecorder, "add_shaped", batch_rows)
    environment = "palaestra.environment.cartpole:CartPole"  # (several: one batch)
    with pytest.raises(stop):
        play(
            0, SEEDS[:games], "AllAct", 1, agents=AGENTS[:1], environment=environment, stored=True
        )
    assert sorted(steps) == [(lane, step) for lane in range(games) for step in range(1, 6)]


@pytest.mark.parametrize(
    "values", [[1.0], [-0.0], [float("nan")], [3], [True], [1.5, 2.5], [[1.0, 2.0]], ["x"]]
)
def test_an_episodes_reward_sum_is_the_sum_of_its_steps_reward_totals(values: list[Any]) -> None:
    """The environment's episode sums (``RewardSums``) add what ``reward_total`` makes of each
    step's rewards (made once for the same list of rewards)."""
    import math

    from palaestra.core.turns import RewardSums
    from palaestra.core.wire.records import reward_total

    sums = RewardSums()
    sums.observed("Muscle-a-0", None)  # (its first observation: no transition yet)
    expected = 0.0
    for _ in range(3):
        rewards = [m.InfoDesc(f"r{i}", None, v) for i, v in enumerate(values)]
        sums.observed("Muscle-a-0", rewards)
        total = reward_total({r.uid: r.value for r in rewards}.values())
        if total is not None:
            expected = expected + total
    found = sums.totals.get("Muscle-a-0")
    if reward_total(values) is None:
        assert found is None
    else:
        assert found is not None
        assert (math.isnan(found) and math.isnan(expected)) or (
            found == expected and math.copysign(1, found) == math.copysign(1, expected)
        )


def test_an_episodes_reward_sum_counts_every_reward_of_a_name_that_repeats() -> None:
    """(two environments of a phase that name a reward alike give a step two rewards of that
    uid: both count, as in the step's ``muscle_actions.reward``)"""
    from palaestra.core.turns import RewardSums

    sums = RewardSums()
    sums.observed("Muscle-a-0", None)
    for _ in range(2):
        sums.observed(
            "Muscle-a-0", [m.InfoDesc("reward", None, 1.0), m.InfoDesc("reward", None, 0.5)]
        )
    assert sums.totals == {"Muscle-a-0": 3.0}


def test_a_rows_rewards_are_by_uid_unless_a_uid_repeats() -> None:
    from palaestra.core.wire.records import reward_items, reward_values, stored_rewards

    unique = [m.InfoDesc("a", None, 1.0), m.InfoDesc("b", None, [2.0])]
    both = [m.InfoDesc("r", None, 1.0), m.InfoDesc("x", None, 3), m.InfoDesc("r", None, 0.5)]
    assert stored_rewards(unique) == {"a": 1.0, "b": [2.0]}
    listed = stored_rewards(both)
    assert listed == [
        {"uid": "r", "value": 1.0},
        {"uid": "x", "value": 3},
        {"uid": "r", "value": 0.5},
    ]
    assert reward_items(stored_rewards(unique)) == [("a", 1.0), ("b", [2.0])]
    assert reward_items(listed) == [("r", 1.0), ("x", 3), ("r", 0.5)]
    assert reward_items(None) == reward_items({}) == reward_items([]) == []
    assert list(reward_values(listed)) == [1.0, 3, 0.5]
    assert stored_rewards([]) == {}


@pytest.mark.parametrize(
    ("environment", "seeds"),
    [
        ("tests.plugins.games:SignedZeroCartPole", (11,)),
        ("tests.plugins.games:SignedZeroCartPole", SEEDS),
        ("tests.plugins.games:SignedZeroBatchCartPole", SEEDS),
    ],
    ids=["one game", "games", "batch"],
)
def test_rewards_of_equal_value_and_other_text_are_recorded_each_as_it_came(
    environment: str, seeds: tuple[int, ...]
) -> None:
    """(0.0 and -0.0 are equal, their texts not: the texts the rows keep for the next same
    rewards are kept by the values' text)"""
    from tests.plugins.games import signed_zero

    rounds = play(0, seeds, "AllAct", 1, agents=AGENTS[:1], environment=environment, stored=True)
    texts = set()
    for game in rounds.environment.games:
        for row in game.out.rows.recorded:
            if isinstance(row, dict):  # (shaped by a batch)
                step, text = row["step"], row["rewards"]
            else:
                step, text = row.step, json_text(row.rewards)
            assert text == json_text({"reward": signed_zero(step)})
            texts.add(text)
    assert texts == {'{"reward":0.0}', '{"reward":-0.0}'}
    (muscle,) = rounds.muscles.values()
    assert isinstance(muscle.out.rows, RowRecorder)
    for row in muscle.out.rows.recorded:
        assert row["rewards"] == json_text({"reward": signed_zero(row["step"] + 1)})


@pytest.mark.parametrize(
    "value", [1.0, -0.0, 0.0, float("nan"), float("inf"), -float("inf"), 5e-324, -2.5]
)
def test_one_float_rewards_total_is_what_the_sum_of_several_makes(value: float) -> None:
    """(one float is taken at once: the same float as the general sum, an empty list beside it
    adding nothing, -0.0 made 0.0 as a sum from 0.0 makes it)"""
    import math

    from palaestra.core.wire.records import reward_total

    alone, summed = reward_total([value]), reward_total([value, []])
    assert alone is not None and summed is not None
    assert (math.isnan(alone) and math.isnan(summed)) or (
        alone == summed and math.copysign(1, alone) == math.copysign(1, summed)
    )


def column_agents(agents: list[AgentSpec] = AGENTS[:1], **params: Any) -> list[AgentSpec]:
    """``agents`` with their linear Muscle on columns (the same weights)."""
    return [
        msgspec.structs.replace(
            spec,
            muscle=ClassSpec(
                name="tests.plugins.games:ColumnMuscle", params={**spec.muscle.params, **params}
            ),
        )
        for spec in agents
    ]


def memory_of(rounds: LocalRounds) -> list[list[tuple[Any, ...]]]:
    """Each game's Muscle memory rows: the sensor values, set points and rewards as objects
    read them, and the objective."""
    (muscle,) = rounds.muscles.values()
    assert muscle.games is not None
    found = []
    for game in muscle.games.games:
        rows = game.memory.muscle_memory(muscle.name)
        found.append(
            [
                (
                    [np.asarray(s.value).tolist() for s in sensors],
                    [(a.uid, a.value, type(a.value)) for a in setpoints],
                    [(r.uid, r.value, r.space) for r in rewards],
                    objective,
                )
                for sensors, setpoints, rewards, objective in zip(
                    rows.sensor_readings,
                    rows.actuator_setpoints,
                    rows.rewards,
                    rows.objective,
                    strict=True,
                )
            ]
        )
    return found


def unread(rounds: LocalRounds) -> bool:
    """Whether every memory row of the Muscle is still the values it was made of (a
    :class:`MadeRow` whose objects no one, the Objective included, has read)."""
    (muscle,) = rounds.muscles.values()
    assert muscle.games is not None
    rows = [row for game in muscle.games.games for row in game.memory.tail(10**6)._rows]
    return bool(rows) and all(type(row) is MadeRow and not row.made for row in rows)


MANY = tuple(range(21, 21 + 2 * COLUMN_CHECK))
"""Seeds of games enough for a column of set points to be checked in one comparison (they
play in two groups)."""


@pytest.mark.parametrize(
    ("cpus", "setting", "games", "groups"),
    [
        (2, None, 64, 1),
        (4, None, 64, 2),
        (16, "auto", 64, 2),
        (16, None, 7, 1),  # (fewer than GROUP_MIN a group: one)
        (2, None, 128, 1),
        (1, "auto", 192, 2),  # (from GROUPS_GAMES games: two, whatever the CPUs)
        (2, "2", 64, 2),
        (16, "1", 64, 1),
        (2, "4", 12, 3),
    ],
)
def test_a_workers_games_play_in_the_groups_the_runtime_config_and_the_cpus_say(
    cpus: int, setting: str | None, games: int, groups: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``round_groups: auto`` (or unset): two groups from 192 games on or where the process
    may use 4 CPUs or more, else one; a number: that many; at least 4 games a group."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    if setting is None:
        monkeypatch.delenv(GROUPS_VAR, raising=False)
    else:
        monkeypatch.setenv(GROUPS_VAR, setting)
    assert groups_of(games) == groups


@pytest.mark.parametrize(("as_list", "seeds"), [(False, SEEDS), (True, SEEDS), (False, MANY)])
def test_a_muscle_on_columns_writes_and_remembers_what_one_on_objects_does(
    as_list: bool, seeds: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Muscle that acts on a round's columns (an array, or a list, per actuator) gets each
    sensor as one array and writes the rows, and keeps the memory rows, of the same policy on
    per-game objects (``propose_actions_batch``), its statistics once a round."""
    monkeypatch.setenv(GROUPS_VAR, "2")  # (whatever the CPUs)
    ColumnMuscle.rounds.clear()
    columns = play(0, seeds, "AllAct", 2, agents=column_agents(as_list=as_list), stored=True)
    # (called once a round, for its games: all of them, or a group's)
    assert max(ColumnMuscle.rounds) == (len(seeds) if seeds is SEEDS else COLUMN_CHECK)
    objects = play(0, seeds, "AllAct", 2, agents=AGENTS[:1], stored=True)
    assert world(columns) == world(objects)
    assert actions(columns) == actions(objects)
    assert unread(columns)  # (DummyObjective read the rewards as they came)
    assert memory_of(columns) == memory_of(objects)
    assert len(memory_of(columns)[0]) > 20
    alone = play(0, SEEDS[:1], "AllAct", 1, agents=column_agents(as_list=as_list), stored=True)
    assert actions(alone) == actions(play(0, SEEDS[:1], "AllAct", 1, agents=AGENTS[:1]))


@pytest.mark.parametrize(
    ("policy", "update_lag"), [("RoundRobin", 0), ("custom", 0), ("AllAct", 1), ("custom", 1)]
)
def test_muscles_on_columns_take_their_turns_and_lag_as_muscles_on_objects(
    policy: str, update_lag: int
) -> None:
    """Two agents on columns, taking turns in each game (a round asks each about the games it
    acts in), or acting before the Brain's answer (``update_lag`` 1): the rows of the same
    agents on objects."""
    agents = column_agents(AGENTS)
    columns = play(0, SEEDS, policy, 2, update_lag=update_lag, agents=agents, stored=True)
    objects = play(0, SEEDS, policy, 2, update_lag=update_lag, stored=True)
    assert world(columns) == world(objects)
    assert actions(columns) == actions(objects)


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("short", "column of ndarray for actuator 'pole.push': expected"),
        ("foreign", "set actuator 'pole.kick'"),
        ("outside", "set actuator 'pole.push' to 2 in game 0 at step 0"),
        ("unpaired", "expected a pair of the set points"),
    ],
)
@pytest.mark.parametrize("seeds", [SEEDS, MANY])
def test_columns_that_break_the_contract_name_the_muscle_and_the_method(
    how: str, problem: str, seeds: tuple[int, ...]
) -> None:
    muscle = ClassSpec(name="tests.plugins.games:BadColumns", params={"how": how})
    agents = [msgspec.structs.replace(AGENTS[0], muscle=muscle)]
    with pytest.raises(PluginContractError, match="propose_actions_columns") as failed:
        play(0, seeds, "AllAct", 1, agents=agents)
    assert "BadColumns" in str(failed.value) and problem in str(failed.value)


class _Player:
    def __init__(self, process: str) -> None:
        self.process = process
        self.sensors = ["env.0"]


class _Stranger(TurnPolicy):
    """Says who acts wrongly: a name, or None."""

    answer: Any = ["Muscle-nobody-0"]

    def acting(self, step: int, agents: Any) -> Any:
        return self.answer


class _Nobody(_Stranger):
    answer = None


@pytest.mark.parametrize("policy", [_Stranger, _Nobody])
def test_a_turn_policy_naming_no_agent_it_was_given_is_named(policy: type) -> None:
    """A turn policy whose ``acting`` returned agents' names (or None) failed the run with
    ``AttributeError: 'str' object has no attribute 'process'`` (``TypeError: object of type
    'NoneType' has no len()``) from palaestra/core/turns.py, naming the simulation controller
    and not the policy."""
    game = Game(policy(), [_Player("Muscle-one-0"), _Player("Muscle-two-0")], [], {"env.0": 1})
    with pytest.raises(PluginContractError) as caught:
        game.observations()
    text = str(caught.value)
    assert text.startswith(f"tests.unit.test_rounds:{policy.__qualname__}.acting returned ")
    assert "on step 0: expected a list of some of the agents it was given" in text
    assert "Muscle-one-0, Muscle-two-0" in text


class _Failing(TurnPolicy):
    """Raises in ``hook`` (``acting``, ``rewarded`` or ``episode_over``) at step 1."""

    hook = "acting"

    def acting(self, step: int, agents: Any) -> Any:
        if self.hook == "acting" and step == 1:
            raise ZeroDivisionError("no turn to give")
        return agents[:1]

    def rewarded(self, step: int, acting: Any, agents: Any) -> Any:
        if self.hook == "rewarded" and step == 1:
            raise ZeroDivisionError("no reward to give")
        return acting

    def episode_over(self, done: Any, conditions: Any) -> bool:
        self.asked = getattr(self, "asked", 0) + 1
        if self.hook == "episode_over" and self.asked == 2:
            raise ZeroDivisionError("no end to give")
        return False


@pytest.mark.parametrize("hook", ["acting", "rewarded", "episode_over"])
def test_a_turn_policy_that_raises_is_named_with_the_step(hook: str) -> None:
    """An exception inside a custom turn policy's ``acting`` failed the run with a bare
    traceback from palaestra/core/turns.py, blaming the simulation controller; it names the
    policy's class and hook, and the step, its own exception the cause."""
    from palaestra.core.supervision.runtime import error_info
    from palaestra.core.turns import Stepped

    policy = _Failing()
    policy.hook = hook
    game = Game(policy, [_Player("Muscle-one-0"), _Player("Muscle-two-0")], [], {"env.0": 1})
    game.observations()
    game.stepped(Stepped([], [], [False]))  # (step 0 passes)
    with pytest.raises(PluginError) as caught:
        game.observations()
        game.stepped(Stepped([], [], [False]))
    error = caught.value
    assert error.plugin == f"tests.unit.test_rounds:_Failing.{hook} at step 1"
    assert isinstance(error.__cause__, ZeroDivisionError)
    shown = error_info("SimulationController-0", error).describe()
    assert shown.startswith(
        f"SimulationController-0 (tests.unit.test_rounds:_Failing.{hook} at step 1): "
        "ZeroDivisionError: no "
    ), shown
