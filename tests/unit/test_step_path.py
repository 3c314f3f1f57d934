"""The step path in one process, with in-memory links (no processes, no sockets, no sleeps).

The turn policies and the one episode loop (:mod:`palaestra.core.turns`), a Muscle process's
round of one game (:func:`palaestra.testing.muscle_step`), an environment process's ``update``
and its checks, and whole episodes of real processes' round paths
(:class:`palaestra.testing.LocalRounds`).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from typing import Any

import pytest
from msgspec.structs import astuple

from palaestra.agent import DummyBrain
from palaestra.agent.muscle_process import MuscleProcess
from palaestra.core.description.specs import AgentSpec, ClassSpec, EnvironmentSpec
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.termination import EpisodeEndsWithEnvironment, TerminationCondition
from palaestra.core.turns import (
    AllAct,
    RoundRobin,
    Stepped,
    TurnPolicy,
    class_name,
    run_episode,
)
from palaestra.core.wire import messages as m
from palaestra.environment.environment_process import EnvironmentProcess
from palaestra.environment.world import World
from palaestra.testing import FakeLink, LocalRounds, RowRecorder, brain_link, muscle_step

DUMMY_ENV = "palaestra.environment.dummy_environment:DummyEnvironment"
BAD_ENV = "tests.plugins.misbehaving:BadValueEnvironment"
FOREIGN_MUSCLE = "tests.plugins.misbehaving:ForeignActuatorMuscle"


# --- the turn policies and the loop, with a scripted driver -----------------------------------


class Agent:
    def __init__(self, process: str, sensors: list[str]) -> None:
        self.process = process
        self.sensors = sensors


class ScriptedDriver:
    """Records what the loop asks for; step ``k`` gives sensor ``s`` the value ``k + 1`` and
    the reward ``k``; ``done`` after ``length`` steps."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.steps = 0
        self.log: list[tuple[str, Any]] = []

    def observe(self, agent: Agent, observation: m.AgentStep) -> None:
        rewards = None if observation.rewards is None else observation.rewards[0].value
        self.log.append(
            (
                "observe",
                (agent.process, observation.step, observation.values, rewards, observation.done),
            )
        )

    def step(self, acting: Sequence[Agent]) -> Stepped:
        self.log.append(("step", [a.process for a in acting]))
        self.steps += 1
        reward = m.InfoDesc("r", None, self.steps - 1)
        return Stepped([("s", self.steps)], [reward], [self.steps >= self.length])

    def finish(self, agents: Sequence[Agent]) -> None:
        self.log.append(("finish", [a.process for a in agents]))


AGENTS = [Agent("a", ["s"]), Agent("b", ["s"])]
CONDITIONS = [EpisodeEndsWithEnvironment()]
CONDITION_SPECS = [ClassSpec(name=class_name(EpisodeEndsWithEnvironment))]


def test_all_act_every_agent_acts_and_is_rewarded_with_that_step() -> None:
    driver = ScriptedDriver(length=2)
    steps = run_episode(AllAct(), driver, AGENTS, CONDITIONS, {"s": 0}).steps
    assert steps == 2
    assert driver.log == [
        ("observe", ("a", 0, [0], None, False)),
        ("observe", ("b", 0, [0], None, False)),
        ("step", ["a", "b"]),
        ("observe", ("a", 1, [1], 0, False)),
        ("observe", ("b", 1, [1], 0, False)),
        ("step", ["a", "b"]),
        ("observe", ("a", 2, [2], 1, True)),
        ("observe", ("b", 2, [2], 1, True)),
        ("finish", ["a", "b"]),
    ]


def test_round_robin_one_agent_per_step_rewarded_with_the_step_after_its_action() -> None:
    driver = ScriptedDriver(length=3)
    steps = run_episode(RoundRobin(), driver, AGENTS, CONDITIONS, {"s": 0}).steps
    assert steps == 3
    assert driver.log == [
        ("observe", ("a", 0, [0], None, False)),
        ("step", ["a"]),
        ("observe", ("b", 1, [1], None, False)),
        ("step", ["b"]),
        ("observe", ("a", 2, [2], 0, False)),  # a's own step 0
        ("step", ["a"]),
        ("observe", ("a", 3, [3], 2, True)),
        ("observe", ("b", 3, [3], 1, True)),
        ("finish", ["a", "b"]),
    ]


def test_a_policy_of_ones_own_decides_who_acts_and_who_is_rewarded() -> None:
    class OnlyB(TurnPolicy):
        def acting(self, step: int, agents: Sequence[Any]) -> Sequence[Any]:
            return [agents[1]]

        def rewarded(self, step: int, acting: Sequence[Any], agents: Sequence[Any]) -> Any:
            return agents  # everyone learns from every step

    driver = ScriptedDriver(length=1)
    run_episode(OnlyB(), driver, AGENTS, CONDITIONS, {"s": 0})
    assert [entry for entry in driver.log if entry[0] == "step"] == [("step", ["b"])]
    assert ("observe", ("a", 1, [1], 0, True)) in driver.log


def test_the_conditions_end_the_episode_and_their_failure_names_them() -> None:
    class Broken(TerminationCondition):
        def episode_done(self, environments_done: Sequence[bool]) -> bool:
            raise RuntimeError("no")

    class AfterTwo(TerminationCondition):
        calls = 0

        def episode_done(self, environments_done: Sequence[bool]) -> bool:
            self.calls += 1
            return self.calls >= 2

    driver = ScriptedDriver(length=100)
    assert run_episode(AllAct(), driver, AGENTS, [AfterTwo()], {"s": 0}).steps == 2
    with pytest.raises(PluginError) as caught:
        run_episode(AllAct(), ScriptedDriver(length=100), AGENTS, [Broken()], {"s": 0})
    assert caught.value.plugin.endswith("Broken.episode_done")


@pytest.mark.parametrize("overridden", [False, True])
def test_a_subclass_of_the_environment_condition_is_asked_where_it_overrides(
    overridden: bool,
) -> None:
    """palaestrAI's default condition ends the episode when an environment is done (without
    being asked each step); a subclass that decides otherwise is asked."""
    from palaestra.simulation import VanillaSimControllerTerminationCondition

    class AfterFive(VanillaSimControllerTerminationCondition):
        calls = 0

        def episode_done(self, environments_done: Sequence[bool]) -> bool:
            self.calls += 1
            return self.calls >= 5

    class Vanilla(VanillaSimControllerTerminationCondition):
        pass

    condition = AfterFive() if overridden else Vanilla()
    result = run_episode(AllAct(), ScriptedDriver(length=3), AGENTS, [condition], {"s": 0})
    assert result.steps == (5 if overridden else 3)


# --- an environment process's update ----------------------------------------------------------


def environment(params: dict[str, Any] | None = None, name: str = DUMMY_ENV) -> World:
    process = World(
        "Environment-env-0",
        environment=EnvironmentSpec(name=name, uid="env", params=params or {"max_iter": 3}),
        environment_id=1,
        worker=0,
        seed=7,
    )
    process.out.rows = RowRecorder()
    return process


def test_update_applies_set_points_records_the_step_and_reports_the_state() -> None:
    env = environment()
    baseline = env.start_world(reset=False)
    assert [s.uid for s in baseline.sensors] == [f"env.{i}" for i in range(10)]
    state = env.update({"0": 5, "3": 7})
    assert state.values == [1] * 10 and not state.done
    assert [(r.uid, r.value) for r in state.rewards] == [("Dummy Reward", 1)]
    assert isinstance(env.out.rows, RowRecorder)
    ((episode, step, sensors, setpoints, rewards, done, simtime, *_),) = map(
        astuple, env.out.rows.recorded
    )
    assert (episode, step, done, simtime) == (0, 1, False, None)
    assert setpoints == {"env.0": 5, "env.3": 7} and sensors["env.9"] == 1
    assert rewards == {"Dummy Reward": 1}
    env.update({})
    assert env.update({}).done


@pytest.mark.parametrize(
    ("how", "at", "problem"),
    [
        ("shape", 1, "update returned sensor '0' = array([0.5, 0.5]"),
        ("outside", 2, "update returned sensor '0' = array([7., 7., 7.]"),
        ("reward", 2, "update returned reward 'Dummy Reward' = 1000000"),
        ("unknown", 2, "update returned sensor 'zz', which its start did not declare"),
        ("missing", 2, "update did not return sensor '0', which its start declared"),
    ],
)
def test_update_blames_the_environment_for_a_bad_value(how: str, at: int, problem: str) -> None:
    env = environment({"how": how, "at": at, "max_iter": 5}, BAD_ENV)
    env.start_world(reset=False)
    with pytest.raises(PluginContractError) as caught:
        for _ in range(at):
            env.update({})
    assert str(caught.value).startswith(f"{BAD_ENV}.{problem}")


@pytest.mark.parametrize("what", ["sensor", "actuator"])
def test_a_reset_that_leaves_out_what_the_start_declared_is_refused(what: str) -> None:
    """A sensor left out failed the run with a bare KeyError where an agent read it; an
    actuator left out dropped the agents' set points of it without a word (their rows still
    recorded them)."""
    env = environment(
        {"max_iter": 3, "what": what}, "tests.plugins.misbehaving:ShrinkingEnvironment"
    )
    env.start_world(reset=False)
    with pytest.raises(PluginContractError) as caught:
        env.start_world(reset=True)
    assert str(caught.value).startswith(
        f"tests.plugins.misbehaving:ShrinkingEnvironment.reset did not return {what} '9', which "
        "the start before it declared"
    )


def test_without_value_checks_only_the_first_step_is_checked() -> None:
    env = environment({"how": "outside", "at": 2, "max_iter": 5}, BAD_ENV)
    env.start_world(reset=False, check_values=False)
    env.update({})
    assert env.update({}).values[0] == [7.0, 7.0, 7.0]


# --- a Muscle process's step ------------------------------------------------------------------


def agent_spec(name: str, sensors: list[str], actuators: list[str], muscle: str) -> AgentSpec:
    return AgentSpec(
        name=name,
        brain=ClassSpec(name="palaestra.agent:DummyBrain"),
        muscle=ClassSpec(name=muscle, params={"count_upwards": True}),
        objective=ClassSpec(name="palaestra.agent:DummyObjective"),
        sensors=tuple(sensors),
        actuators=tuple(actuators),
    )


def muscle_process(
    baseline: m.EnvBaseline,
    name: str = "one",
    own: range = range(5),
    muscle: str = "palaestra.agent:DummyMuscle",
) -> MuscleProcess:
    sensors = [f"env.{i}" for i in own]
    spec = agent_spec(name, sensors, sensors, muscle)
    by_uid = {d.uid: d for d in [*baseline.sensors, *baseline.actuators]}
    process = MuscleProcess(
        f"Muscle-{name}-0",
        agent=spec,
        agent_id=1,
        worker=0,
        mode="train",
        seed=3,
        brain_endpoint="",
        store_endpoint=None,
        sensors=[by_uid[uid] for uid in sensors],
        actuators=[d for d in baseline.actuators if d.uid in sensors],
    )
    process.out.rows = RowRecorder("muscle_actions")
    return process


def test_a_muscle_step_completes_the_transition_asks_the_brain_and_acts() -> None:
    env = environment()
    baseline = env.start_world(reset=False)
    muscle = muscle_process(baseline)
    brain = FakeLink("Brain-one", lambda message: m.BrainUpdate(update=pickle.dumps(41)))
    to_env = FakeLink("Environment-env-0")
    muscle.wire(brain, {"env": to_env})
    muscle.begin_episode(
        m.AgentEpisode(
            episode=0,
            sensors=baseline.sensors[:5],
            actuators=baseline.actuators[:5],
        )
    )
    first = muscle_step(muscle, m.AgentStep(step=0, values=[0] * 5, rewards=None, done=False))
    # the brain answered 41 before the muscle acted (update_lag 0): it counts from there
    assert first.setpoints == {f"env.{i}": 41 for i in range(5)}
    reward = [m.InfoDesc("Dummy Reward", None, 1)]
    muscle_step(muscle, m.AgentStep(step=1, values=[1] * 5, rewards=reward, done=False))
    assert isinstance(muscle.out.rows, RowRecorder)
    (row,) = muscle.out.rows.recorded
    assert (row["episode"], row["step"], row["done"]) == (0, 0, False)
    assert json.loads(row["sensor_readings"]) == {f"env.{i}": 0 for i in range(5)}
    assert json.loads(row["actuator_setpoints"]) == first.setpoints
    assert json.loads(row["rewards"]) == {"Dummy Reward": 1} and row["objective"] == 1.0
    last = muscle_step(muscle, m.AgentStep(step=2, values=[2] * 5, rewards=reward, done=True))
    assert last.setpoints == {} and len(muscle.out.rows.recorded) == 2
    experiences = [e for x in brain.sent if isinstance(x, m.Experiences) for e in x.items]
    assert [e.transition is not None for e in experiences] == [False, True, True]
    assert experiences[-1].done


def test_a_muscle_setting_an_actuator_it_was_not_given_is_stopped_before_sending() -> None:
    env = environment()
    baseline = env.start_world(reset=False)
    muscle = muscle_process(baseline, own=range(5, 10), muscle=FOREIGN_MUSCLE)  # not env.0
    to_env = FakeLink("Environment-env-0")
    muscle.wire(FakeLink("Brain-one", lambda _: m.BrainUpdate(update=None)), {"env": to_env})
    muscle.begin_episode(
        m.AgentEpisode(episode=0, sensors=baseline.sensors[5:], actuators=baseline.actuators[5:])
    )
    with pytest.raises(PluginContractError, match="set actuator 'env.0', which agent 'one'"):
        muscle_step(muscle, m.AgentStep(step=0, values=[0] * 5, rewards=None, done=False))


def test_data_for_the_brain_that_cannot_be_pickled_names_the_muscle() -> None:
    """It failed the run as the process's own AttributeError from pickle, with palaestra's
    traceback, naming neither the Muscle's class nor propose_actions."""
    env = environment()
    baseline = env.start_world(reset=False)
    muscle = muscle_process(baseline, muscle="tests.plugins.misbehaving:UnpicklableDataMuscle")
    muscle.wire(
        FakeLink("Brain-one", lambda _: m.BrainUpdate(update=None)), {"env": FakeLink("e")}
    )
    muscle.begin_episode(
        m.AgentEpisode(episode=0, sensors=baseline.sensors[:5], actuators=baseline.actuators[:5])
    )
    with pytest.raises(PluginContractError) as caught:
        muscle_step(muscle, m.AgentStep(step=0, values=[0] * 5, rewards=None, done=False))
    assert str(caught.value).startswith(
        "tests.plugins.misbehaving:UnpicklableDataMuscle.propose_actions returned function "
    )
    assert "as the data for the Brain, which cannot be pickled (Can't pickle local" in str(
        caught.value
    )


# --- whole episodes in one process -----------------------------------------------------------


@pytest.mark.parametrize(("policy", "actions"), [(AllAct(), [3, 3]), (RoundRobin(), [2, 1])])
def test_an_episode_of_real_step_paths_in_one_process(
    policy: TurnPolicy, actions: list[int]
) -> None:
    process = EnvironmentProcess(
        "Environment-env-0",
        environment=EnvironmentSpec(name=DUMMY_ENV, uid="env", params={"max_iter": 3}),
        environment_id=1,
        worker=0,
        seed=7,
        store_endpoint=None,
    )
    env = process.world
    env.out.rows = RowRecorder()
    rounds = LocalRounds(process)
    baseline = rounds.start()
    brains = []
    for name, own in (("one", range(5)), ("two", range(5, 10))):
        muscle = muscle_process(baseline, name, own)
        brain = DummyBrain()
        brains.append(brain)
        rounds.wire(muscle, brain_link(brain, f"{name}-0"))
    done = rounds.play(1, class_name(type(policy)), CONDITION_SPECS)
    assert done.steps == 3
    (ended,) = rounds.told
    assert isinstance(ended, m.LaneEpisodeDone) and ended.steps == 3
    assert isinstance(env.out.rows, RowRecorder)
    assert [row.step for row in env.out.rows.recorded] == [1, 2, 3]
    assert [row.done for row in env.out.rows.recorded] == [False, False, True]
    recorded = [len(rounds.muscles[p].out.rows.recorded) for p in ("Muscle-one-0", "Muscle-two-0")]
    assert recorded == actions  # one row per action, each completed by its rewards
    assert all(brain.thinking_calls > 0 for brain in brains)


# --- how an episode ends, and its rewards --------------------------------------------------


class EndingDriver(ScriptedDriver):
    """A ScriptedDriver whose two environments say how they end: the first ``first``, the
    second ``second`` ((terminated, truncated) at the last step; False, False before)."""

    def __init__(self, length: int, first: tuple[Any, Any], second: tuple[Any, Any]) -> None:
        super().__init__(length)
        self.ends = [first, second]
        self.seen: list[tuple[str, bool, Any, Any]] = []

    def observe(self, agent: Agent, observation: m.AgentStep) -> None:
        super().observe(agent, observation)
        self.seen.append(
            (agent.process, observation.done, observation.terminated, observation.truncated)
        )

    def step(self, acting: Sequence[Agent]) -> Stepped:
        stepped = super().step(acting)
        values, rewards, done = stepped.values, stepped.rewards, stepped.done
        last = self.steps >= self.length
        flags = [
            ends if last else tuple(e if e is None else False for e in ends) for ends in self.ends
        ]
        return Stepped(values, rewards, done * 2, [f[0] for f in flags], [f[1] for f in flags])


@pytest.mark.parametrize(
    ("first", "second", "ends"),
    [
        ((True, False), (False, False), (True, False)),
        ((False, True), (False, False), (False, True)),
        ((False, True), (True, False), (True, False)),  # terminated wins
        ((None, None), (None, None), (None, None)),  # the environments do not say
        ((False, False), (None, None), (False, True)),  # over, not terminal: cut short
    ],
)
def test_the_episode_ends_as_its_environments_say(
    first: tuple[Any, Any], second: tuple[Any, Any], ends: tuple[Any, Any]
) -> None:
    driver = EndingDriver(3, first, second)
    result = run_episode(AllAct(), driver, AGENTS, CONDITIONS, {"s": 0})
    assert (result.steps, result.terminated, result.truncated) == (3, *ends)
    going = (None, None) if ends == (None, None) else (False, False)
    last = [(a, t, u) for a, done, t, u in driver.seen if done]
    assert last == [("a", *ends), ("b", *ends)]
    later = [(t, u) for _, done, t, u in driver.seen[2:] if not done]  # after the first step
    assert later and set(later) == {going}


@pytest.mark.parametrize("policy", [AllAct(), RoundRobin()])
def test_episode_rewards_sum_what_each_muscle_records(policy: TurnPolicy) -> None:
    """A Muscle records a row (with its reward total) for each observation with rewards after
    one it acted on: the episode reward is the sum over those."""
    driver = ScriptedDriver(length=5)
    result = run_episode(policy, driver, AGENTS, CONDITIONS, {"s": 0})
    recorded: dict[str, float] = {}
    acted: set[str] = set()
    for kind, entry in driver.log:
        if kind != "observe":
            continue
        process, _, _, reward, _ = entry
        if process in acted and reward is not None:
            recorded[process] = recorded.get(process, 0.0) + reward
        acted.add(process)
    assert result.rewards == recorded and set(recorded) == {"a", "b"}
