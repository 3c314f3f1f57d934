"""palaestra.testing: the checks users run on their own plug-ins."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import RewardInformation, SensorInformation
from palaestra.core.spaces import Box
from palaestra.environment import DummyEnvironment
from palaestra.testing import PluginCheckError, check_brain, check_environment, check_muscle


def test_the_built_ins_keep_their_contracts() -> None:
    sensors, actuators = check_environment(
        "palaestra.environment.dummy_environment:DummyEnvironment", {"discrete": False}
    )
    assert [s.uid for s in sensors] == [str(i) for i in range(10)]
    check_muscle(DummyMuscle, sensors=sensors, actuators=actuators)
    check_muscle(DummyMuscle, {"count_upwards": True}, sensors=sensors, actuators=actuators)
    check_brain("palaestra.agent.dummy_brain:DummyBrain", sensors=sensors, actuators=actuators)


class ForgetfulEnvironment(DummyEnvironment):
    def update(self, actuators: Any) -> Any:
        sensors, rewards, done = super().update(actuators)
        return sensors[:-1], rewards, done


class OutOfSpaceMuscle(DummyMuscle):
    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        for actuator in actuators_available:
            actuator(10_000)
        return actuators_available, None


class UnpicklableBrain(DummyBrain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        return lambda: None


class BrokenDumpBrain(DummyBrain):
    def store(self) -> None:
        self.store_brain_dump(b"not json")


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (
            lambda s, a: check_environment(ForgetfulEnvironment),
            "ForgetfulEnvironment.update did not return sensor '9', which its start declared",
        ),
        (
            lambda s, a: check_muscle(OutOfSpaceMuscle, sensors=s, actuators=a),
            "OutOfSpaceMuscle.propose_actions set actuator '0' to 10000 at step 0 of episode 0, "
            "which is not in its declared space Discrete(100)",
        ),
        (
            lambda s, a: check_brain(UnpicklableBrain, sensors=s, actuators=a),
            "UnpicklableBrain.thinking: returned function, which cannot be pickled",
        ),
        (
            lambda s, a: check_brain(BrokenDumpBrain, sensors=s, actuators=a),
            "BrokenDumpBrain.load raised JSONDecodeError",
        ),
        (
            lambda s, a: check_muscle(DummyBrain, sensors=s, actuators=a),
            "DummyBrain is not a palaestra Muscle",
        ),
    ],
    ids=["lost-sensor", "out-of-space", "unpicklable-update", "unloadable-dump", "wrong-kind"],
)
def test_a_plugin_that_breaks_its_contract_is_named(check: Any, expected: str) -> None:
    sensors, actuators = check_environment(DummyEnvironment)
    with pytest.raises(PluginCheckError) as caught:
        check(sensors, actuators)
    assert expected in str(caught.value)
    assert caught.value.exit_code == 2


class OddEnvironment(DummyEnvironment):
    """A DummyEnvironment (Box sensors) with one quirk: ``extra`` (a sensor its start did not
    declare, in every step), ``bad_start`` (a start value outside its space), ``shrinking``
    (sensor ``"9"`` left out of its resets), ``silent_end``
    (no readings in an episode's last step), ``flat_reward`` (its reward as ``np.array([r])``
    for a space of shape ``()``) or ``repeated`` (its actuators twice, as palaestrAI's
    random environments return them)."""

    def __init__(self, quirk: str = "", **params: Any) -> None:
        super().__init__(discrete=False, max_iter=2, **params)
        self.quirk = quirk

    def start_environment(self) -> Any:
        sensors, actuators = super().start_environment()
        self.starts = getattr(self, "starts", 0) + 1
        if self.quirk == "shrinking" and self.starts > 1:
            sensors = sensors[:-1]
        if self.quirk == "bad_start":
            sensors[0] = SensorInformation(7.0, sensors[0].space, sensors[0].uid)
        if self.quirk == "repeated":
            actuators = actuators + actuators
        return sensors, actuators

    def update(self, actuators: Any) -> Any:
        sensors, rewards, done = super().update(actuators)
        if self.quirk == "extra":
            sensors.append(SensorInformation(0.0, Box(0, 2, shape=()), "extra"))
        if self.quirk == "silent_end" and done:
            sensors = []
        if self.quirk == "flat_reward":
            rewards = [RewardInformation(np.array([1.0]), Box(0, 10, shape=()), "r")]
        return sensors, rewards, done


@pytest.mark.parametrize(
    ("quirk", "expected"),
    [
        (
            "extra",
            "OddEnvironment.update returned sensor 'extra', which its start did not declare",
        ),
        ("bad_start", "OddEnvironment.start_environment returned sensor '0' = 7.0, which is not"),
        ("shrinking", "OddEnvironment.reset did not return sensor '9', which the start before"),
    ],
    ids=["extra", "bad_start", "shrinking"],
)
def test_check_environment_refuses_what_a_run_refuses(quirk: str, expected: str) -> None:
    """check_environment passed both, and the run then failed on them: it now checks with the
    run's own checks, and says what the run would say."""
    with pytest.raises(PluginCheckError) as caught:
        check_environment(OddEnvironment, {"quirk": quirk}, steps=5)
    assert expected in str(caught.value)


@pytest.mark.parametrize("quirk", ["silent_end", "flat_reward", "repeated"])
def test_check_environment_passes_what_a_run_takes(quirk: str) -> None:
    """A last step without readings, a reward of its space's size in another shape (reshaped,
    with a warning) and actuators given twice: a run takes them (see docs/run-files.md), and
    check_environment refused them."""
    sensors, actuators = check_environment(OddEnvironment, {"quirk": quirk}, steps=5)
    assert [str(s.uid) for s in sensors] == [str(i) for i in range(10)]
    assert [str(a.uid) for a in actuators] == [str(i) for i in range(10)]


class ExitingMuscle(DummyMuscle):
    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        sys.exit(0)


class UnbuildableEnvironment(DummyEnvironment):
    def __init__(self, **params: Any) -> None:
        raise FileNotFoundError("world.json")


def test_a_plugin_ending_the_process_or_failing_to_construct_fails_its_check() -> None:
    """``sys.exit(0)`` in a plug-in ended the checking script with exit 0, as if every check
    had passed (a run fails on it); an environment whose constructor raised gave a bare
    PluginError saying only ``...UnbuildableEnvironment.__init__``."""
    sensors, actuators = check_environment(DummyEnvironment)
    with pytest.raises(PluginCheckError, match=r"ExitingMuscle.propose_actions raised SystemExit"):
        check_muscle(ExitingMuscle, sensors=sensors, actuators=actuators)
    with pytest.raises(
        PluginCheckError,
        match=r"UnbuildableEnvironment.__init__ raised FileNotFoundError\('world.json'\)",
    ):
        check_environment(UnbuildableEnvironment)


def test_the_check_of_a_small_float_box_agrees_with_its_contains() -> None:
    """The per-step check of small float boxes compares in Python: the same answers as
    ``Box.contains`` for values inside, on and outside the bounds, NaN, infinities, integer
    arrays, other shapes and dtypes, and non-arrays."""

    from palaestra.core.space_checks import value_check
    from palaestra.core.spaces import Box

    f32max = float(np.finfo(np.float32).max)
    spaces = [
        Box(-1.0, 1.0, shape=(4,)),
        Box(np.array([-2.4, -np.inf]), np.array([2.4, np.inf]), dtype=np.float64),
        Box(-f32max, f32max, shape=(2, 2)),
    ]
    rng = np.random.default_rng(3)
    for space in spaces:
        check = value_check(space)
        values: list[object] = [
            space.sample(),
            space.low.copy(),
            space.high.copy(),
            np.zeros(space.shape, dtype=np.int64),
            np.full(space.shape, np.nan, dtype=np.float32),
            np.full(space.shape, np.inf),
            np.full(space.shape, 3.0, dtype=np.float32),
            np.zeros((5,)),
            np.zeros(space.shape, dtype=bool),
            np.zeros(space.shape).tolist(),
            "text",
        ]
        values += [rng.normal(0.0, 2.0, size=space.shape) for _ in range(50)]
        for value in values:
            assert check(value) == space.contains(value), (space, value)


class BatchMuscle(DummyMuscle):
    """Acts in all games in one call; with ``short``, forgets the last game."""

    def __init__(self, short: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.short = short

    def propose_actions_batch(self, sensors: Any, actuators_available: Any) -> Any:
        games = len(sensors) - (1 if self.short else 0)
        answers = [self.propose_actions(sensors[k], actuators_available[k]) for k in range(games)]
        return [a[0] for a in answers], [a[1] for a in answers]


def test_check_muscle_calls_a_batched_hook_for_several_games() -> None:
    sensors, actuators = check_environment(DummyEnvironment, {"discrete": False})
    check_muscle(BatchMuscle, sensors=sensors, actuators=actuators, games=4)
    with pytest.raises(PluginCheckError) as caught:
        check_muscle(BatchMuscle, {"short": True}, sensors=sensors, actuators=actuators)
    assert str(caught.value).endswith(
        "BatchMuscle.propose_actions_batch: returned 2 set point lists and 2 data items for 3 "
        "games: expected one of each per game"
    )


class ColumnsMuscle(DummyMuscle):
    """Acts on a round's columns: each actuator's first value in its space's range, for every
    game; with ``outside``, one past it."""

    def __init__(self, outside: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.outside = outside

    def propose_actions_columns(self, sensors: Any, actuators: Any, games: int) -> Any:
        assert all(len(column) == games for column in sensors.values())
        chosen = {}
        for actuator in actuators:
            value = actuator.space.sample()
            if self.outside:
                value = np.asarray(actuator.space.high) + 1
            chosen[actuator.uid] = [value] * games
        return chosen, [None] * games


def test_check_muscle_calls_a_columns_hook_for_several_games() -> None:
    sensors, actuators = check_environment(DummyEnvironment, {"discrete": False})
    check_muscle(ColumnsMuscle, sensors=sensors, actuators=actuators, games=4)
    with pytest.raises(PluginCheckError) as caught:
        check_muscle(ColumnsMuscle, {"outside": True}, sensors=sensors, actuators=actuators)
    # (what a run would say: the check is the run's own)
    assert "ColumnsMuscle.propose_actions_columns set actuator '0' to 11.0 in game 0" in str(
        caught.value
    )
    assert "not in its declared space Box" in str(caught.value)


class CountingMuscle(DummyMuscle):
    """Adds a statistic at every step, as a run stores it (one row per step); with
    ``unstorable``, one the store cannot hold."""

    def __init__(self, unstorable: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.value: Any = object() if unstorable else 1

    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        self.add_statistics("steps", self.value)
        return super().propose_actions(sensors, actuators_available)


class BatchCountingMuscle(CountingMuscle):
    def propose_actions_batch(self, sensors: Any, actuators_available: Any) -> Any:
        self.add_statistics("rounds", 1)
        answers = [
            DummyMuscle.propose_actions(self, s, a)
            for s, a in zip(sensors, actuators_available, strict=True)
        ]
        return [a[0] for a in answers], [a[1] for a in answers]


class LossBrain(DummyBrain):
    """Adds a statistic at every ``thinking`` and every ``store``, as a learner logs its
    loss."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        self.add_statistics("loss", 0.5)
        return super().thinking(muscle_id, data_from_muscle)

    def store(self) -> None:
        self.add_statistics("loss", 0.25)
        super().store()


def test_the_checks_pop_statistics_after_each_call_as_a_run_does() -> None:
    """A Muscle or Brain that adds a statistic in each ``propose_actions`` or ``thinking``
    failed its check with 'statistic ... was already added in this step' at the second call
    (a run pops them after each call, and took it); a value the store cannot hold passed the
    check, and the run failed on it."""
    sensors, actuators = check_environment(DummyEnvironment)
    check_muscle(CountingMuscle, sensors=sensors, actuators=actuators, steps=3)
    check_muscle(BatchCountingMuscle, sensors=sensors, actuators=actuators, steps=3)
    check_brain(LossBrain, sensors=sensors, actuators=actuators, data=(None, 0, 1))
    with pytest.raises(PluginCheckError) as caught:
        check_muscle(CountingMuscle, {"unstorable": True}, sensors=sensors, actuators=actuators)
    assert "CountingMuscle.propose_actions: add_statistics: statistic 'steps': a " in str(
        caught.value
    )
    assert "has no form the store can hold" in str(caught.value)


class BareValuesMuscle(DummyMuscle):
    """Returns its set points' values, not the actuators it was given."""

    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        return [a.space.sample() for a in actuators_available], None


def test_check_muscle_refuses_set_points_that_are_no_actuators_as_a_run_does() -> None:
    """Set points that were bare values failed check_muscle with a bare ``AttributeError:
    'int' object has no attribute 'uid'`` from palaestra's check (a run names the Muscle and
    the contract): the check uses the run's own."""
    sensors, actuators = check_environment(DummyEnvironment)
    with pytest.raises(PluginCheckError) as caught:
        check_muscle(BareValuesMuscle, sensors=sensors, actuators=actuators)
    assert str(caught.value).startswith(
        "tests.unit.test_plugin_checks:BareValuesMuscle.propose_actions returned set points "
        "of type int at step 0 of episode 0: expected the set points (the actuators it was "
        "given, each set: a list of ActuatorInformation)"
    )
