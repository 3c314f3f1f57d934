"""palaestrAI's environment contract on palaestra: :class:`SimTime`, :class:`EnvironmentBaseline`
and :class:`EnvironmentState` with palaestrAI's fields, an environment that assigns its own
``seed`` and ``rng`` and keeps ``sensors``/``actuators`` lists, and the sim time an environment
reports reaching its ``world_states`` row."""

from __future__ import annotations

import pickle
from dataclasses import fields
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from msgspec.structs import astuple

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.information import SensorInformation
from palaestra.core.plugin import PluginContractError
from palaestra.core.simtime import SimTime
from palaestra.environment import (
    DummyEnvironment,
    EnvironmentBaseline,
    EnvironmentContext,
    EnvironmentState,
)
from palaestra.environment.world import World
from palaestra.testing import RowRecorder
from palaestra.types import Discrete
from tests.plugins.parity_style import SimTimeEnvironment

STYLE = "tests.plugins.parity_style:SimTimeEnvironment"

# --- SimTime ----------------------------------------------------------------------------------


def test_simtime_holds_ticks_and_a_timestamp() -> None:
    stamp = datetime(2024, 5, 1, 8, 30)
    simtime = SimTime(3, stamp)
    assert (simtime.simtime_ticks, simtime.simtime_timestamp) == (3, stamp)
    assert SimTime().simtime_ticks is None and SimTime().simtime_timestamp is None
    assert SimTime(simtime_ticks=3, simtime_timestamp=stamp) == simtime
    assert SimTime(4, stamp) != simtime
    simtime.simtime_timestamp = "2024-05-01T09:00:00"  # palaestrAI's setter reads ISO strings
    assert simtime.simtime_timestamp == datetime(2024, 5, 1, 9)
    simtime.simtime_ticks = np.int64(7)
    assert simtime.simtime_ticks == 7 and type(simtime.simtime_ticks) is int
    assert repr(SimTime(1)) == "SimTime(simtime_ticks=1, simtime_timestamp=None)"


def test_simtime_plain_form_and_pickle_round_trip() -> None:
    simtime = SimTime(5, datetime(2024, 5, 1, 8, 30))
    assert simtime.to_dict() == {
        "simtime_ticks": 5,
        "simtime_timestamp": "2024-05-01T08:30:00",
    }
    assert SimTime.from_dict(simtime.to_dict()) == simtime
    assert pickle.loads(pickle.dumps(simtime)) == simtime
    assert SimTime(None, None).to_dict() == {"simtime_ticks": None, "simtime_timestamp": None}


@pytest.mark.parametrize(
    ("args", "error", "says"),
    [
        ((1.5,), TypeError, "simtime_ticks must be an integer"),
        ((True,), TypeError, "simtime_ticks must be an integer"),
        ((1, 12345), TypeError, "simtime_timestamp must be a datetime"),
        ((1, "yesterday"), ValueError, "not an ISO 8601"),
    ],
)
def test_simtime_refuses_what_is_not_a_time(args: tuple[Any, ...], error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        SimTime(*args)


# --- EnvironmentBaseline / EnvironmentState ---------------------------------------------------


def test_baseline_and_state_have_palaestrais_fields_in_its_order() -> None:
    assert [f.name for f in fields(EnvironmentBaseline)] == [
        "sensors_available",
        "actuators_available",
        "simtime",
        "static_world_model",
    ]
    assert [f.name for f in fields(EnvironmentState)] == [
        "sensor_information",
        "rewards",
        "done",
        "world_state",
        "simtime",
        "terminated",
        "truncated",
    ]
    baseline = EnvironmentBaseline([], [])
    assert baseline.simtime == SimTime(0) and baseline.static_world_model is None
    state = EnvironmentState([], [], False)
    assert (state.world_state, state.simtime, state.terminated, state.truncated) == (
        None,
        None,
        None,
        None,
    )
    # positional, as palaestrAI's historical callers write it
    state = EnvironmentState([], [], True, {"w": 1}, SimTime(2))
    assert state.world_state == {"w": 1} and state.simtime == SimTime(2)


def test_baseline_and_state_unpack_like_palaestras_tuples() -> None:
    sensor = SensorInformation(1, Discrete(2), "0")
    sensors, actuators = EnvironmentBaseline([sensor], [], SimTime(1))
    assert sensors == [sensor] and actuators == []
    readings, rewards, done = EnvironmentState([sensor], [], True, truncated=True)
    assert (readings, rewards, done) == ([sensor], [], True)


@pytest.mark.parametrize(
    ("done", "terminated", "truncated", "says"),
    [
        (True, True, True, "at most one"),
        (False, True, None, "done=False"),
        (False, None, True, "done=False"),
    ],
)
def test_state_refuses_contradicting_flags(
    done: bool, terminated: bool | None, truncated: bool | None, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        EnvironmentState([], [], done, terminated=terminated, truncated=truncated)


# --- the Environment base class ---------------------------------------------------------------


def test_an_environment_may_assign_its_own_seed_and_rng() -> None:
    env = SimTimeEnvironment("e", "", 11)
    own = env.rng
    env.attach(EnvironmentContext(uid="e", worker=0, seed=99))
    assert env.rng is own  # kept: its random draws are its own
    assert env.seed == 11
    assert (env.uid, env.name) == ("e", "e")


def test_an_environment_that_assigns_nothing_gets_the_runs_seed_and_rng() -> None:
    env = DummyEnvironment(uid="e", seed=5)
    env.attach(EnvironmentContext(uid="e", worker=0, seed=99))
    assert env.seed == 99
    assert env.rng.integers(1 << 30) == np.random.default_rng(99).integers(1 << 30)
    assert env.sensors == [] and env.actuators == [] and env.reward is None


def test_an_environments_rng_is_made_once_not_at_each_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An environment reads ``self.rng`` in each step: the generator is made once (a new one
    made for each read and thrown away cost 8 µs a read, where a read costs 0.1)."""
    env = DummyEnvironment(uid="e", seed=5)
    env.attach(EnvironmentContext(uid="e", worker=0, seed=99))
    made: list[Any] = []
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: made.append(seed))
    first = env.rng
    assert all(env.rng is first for _ in range(3)) and made == []


# --- the environment process: both return forms, sim time in the row ---------------------------


def environment(name: str = STYLE, **params: Any) -> World:
    process = World(
        "Environment-env-0",
        environment=EnvironmentSpec(name=name, uid="env", params=params or {"max_iter": 3}),
        environment_id=1,
        worker=0,
        seed=7,
    )
    process.out.rows = RowRecorder()
    return process


def test_a_palaestrai_style_environment_runs_and_its_sim_time_reaches_the_rows() -> None:
    env = environment()
    baseline = env.start_world(reset=False)
    assert [s.uid for s in baseline.sensors] == ["env.Sensor-0", "env.Sensor-1"]
    assert [a.uid for a in baseline.actuators] == ["env.Actuator-0", "env.Actuator-1"]
    states = [env.update({"Actuator-0": 3.0}) for _ in range(3)]
    assert [s.done for s in states] == [False, False, True]
    assert isinstance(env.out.rows, RowRecorder)
    rows = [astuple(row) for row in env.out.rows.recorded]
    assert [row.simtime for row in env.out.rows.recorded] == [
        {"simtime_ticks": 101, "simtime_timestamp": "2024-01-01T12:01:00"},
        {"simtime_ticks": 102, "simtime_timestamp": "2024-01-01T12:02:00"},
        {"simtime_ticks": 103, "simtime_timestamp": "2024-01-01T12:03:00"},
    ]
    # the last step reported no readings: the readings of the step before stand
    assert states[2].values == states[1].values
    assert rows[2][2] == rows[1][2]
    # and a reset starts again from a fresh baseline
    env.start_world(reset=True)
    env.update({})
    assert env.out.rows.recorded[-1].simtime["simtime_ticks"] == 101


def test_a_last_step_without_readings_is_fine_even_as_the_first_step() -> None:
    env = environment(max_iter=1)
    env.start_world(reset=False)
    state = env.update({})
    assert state.done and len(state.values) == 2


def test_readings_missing_from_a_step_that_is_not_the_last_still_fail() -> None:
    class Forgetful(SimTimeEnvironment):
        def update(self, actuators: Any) -> EnvironmentState:
            state = super().update(actuators)
            state.sensor_information = []
            return state

    env = environment()
    env.env = Forgetful("env", "", 7, max_iter=3)
    env.start_world(reset=False)
    with pytest.raises(PluginContractError, match="did not return sensor 'Sensor-0'"):
        env.update({})


def test_a_tuple_returning_environment_records_no_sim_time() -> None:
    env = environment("palaestra.environment.dummy_environment:DummyEnvironment", max_iter=2)
    env.start_world(reset=False)
    env.update({})
    assert env.out.rows.recorded[-1].simtime is None


def test_a_sim_time_that_is_not_one_fails_naming_the_environment() -> None:
    env = environment("tests.plugins.parity_style:WrongSimTimeEnvironment")
    env.start_world(reset=False)
    env.update({})
    with pytest.raises(PluginContractError) as caught:
        env.update({})
    message = str(caught.value)
    assert "WrongSimTimeEnvironment" in message and "update" in message
    assert "simtime = 42" in message


class Flagging(SimTimeEnvironment):
    """Ends its episodes saying ``flags`` (``terminated``, ``truncated``) at its last step."""

    flags: tuple[Any, Any] = (None, None)

    def update(self, actuators: Any) -> EnvironmentState:
        state = super().update(actuators)
        if state.done:
            state.terminated, state.truncated = self.flags
        return state


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("no", None), "terminated = 'no'"),
        ((False, "yes"), "truncated = 'yes'"),
        ((0, None), "terminated = 0"),  # (not a bool, though it reads as one)
        ((np.array([True]), None), "terminated = array([ True]) (shape (1,), dtype bool)"),
    ],
)
def test_a_terminated_or_truncated_that_is_no_bool_fails_naming_the_environment(
    flags: tuple[Any, Any], said: str
) -> None:
    """As ``done`` that is no bool does (the first step's check): ``terminated = "no"`` was
    read as True, and the episode was stored as terminated."""
    env = environment()
    env.env = Flagging("env", "", 7, max_iter=2)
    env.env.flags = flags
    env.start_world(reset=False)
    env.update({})
    with pytest.raises(PluginContractError) as caught:
        env.update({})
    message = str(caught.value)
    assert message.startswith(
        "tests.unit.test_environment_parity:Flagging.update returned an EnvironmentState with "
        f"{said}, "
        "expected a bool (or None: the environment does not say)"
    ), message
    assert env.out.rows.recorded[-1].step == 1  # (the last step's row is not made)


class LateDone(SimTimeEnvironment):
    """Says ``done`` as ``late`` from its second step on."""

    late: Any = False

    def update(self, actuators: Any) -> EnvironmentState:
        state = super().update(actuators)
        if self.iter > 1:
            state.done = self.late
        return state


@pytest.mark.parametrize(("late", "said"), [("no", "'no'"), (0, "0"), (None, "None")])
def test_a_done_that_is_no_bool_after_the_first_step_fails_naming_the_environment(
    late: Any, said: str
) -> None:
    """Only the first step's ``done`` was checked; a later ``done = "no"`` was read as True
    (the episode ended there, stored as done) and ``0`` or None as False."""
    env = environment()
    env.env = LateDone("env", "", 7, max_iter=5)
    env.env.late = late
    env.start_world(reset=False)
    env.update({})
    with pytest.raises(PluginContractError) as caught:
        env.update({})
    assert str(caught.value).startswith(
        f"tests.unit.test_environment_parity:LateDone.update returned done = {said}, expected "
        "a bool"
    ), str(caught.value)


class LateWrong(SimTimeEnvironment):
    """Returns ``wrong`` from its second step on."""

    wrong: Any = None

    def update(self, actuators: Any) -> Any:
        state = super().update(actuators)
        return self.wrong if self.iter > 1 else state


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (None, "returned None, expected (sensors, rewards, done)"),
        (([], False), "returned ([], False), expected (sensors, rewards, done)"),
        ((["Sensor-0"], [], False), "returned sensor 'Sensor-0', expected a SensorInformation"),
        (([], [0.5], True), "returned reward 0.5, expected a RewardInformation"),
    ],
)
def test_a_result_of_a_wrong_type_after_the_first_step_fails_naming_the_environment(
    wrong: Any, said: str
) -> None:
    """Only the first step's result was checked: a later one of a wrong type failed the run
    with palaestra's own TypeError, IndexError or AttributeError."""
    env = environment()
    env.env = LateWrong("env", "", 7, max_iter=5)
    env.env.wrong = wrong
    env.start_world(reset=False)
    env.update({})
    with pytest.raises(PluginContractError) as caught:
        env.update({})
    assert str(caught.value).startswith(
        f"tests.unit.test_environment_parity:LateWrong.update {said}"
    ), str(caught.value)


class StartsAs(SimTimeEnvironment):
    """Returns its baseline from ``start_environment`` in the form ``form`` names."""

    form = "baseline"

    def start_environment(self) -> Any:
        baseline = super().start_environment()
        sensors, actuators = baseline.sensors_available, baseline.actuators_available
        return {
            "baseline": baseline,
            "pair": (sensors, actuators),
            "list": [sensors, actuators],
            "with sim time": (sensors, actuators, baseline.simtime),
            "sensors alone": (sensors,),
        }[self.form]


@pytest.mark.parametrize("form", ["baseline", "pair", "list"])
def test_a_start_returns_a_baseline_or_the_pair_of_sensors_and_actuators(form: str) -> None:
    env = environment()
    env.env = StartsAs("env", "", 7)
    env.env.form = form
    baseline = env.start_world(reset=False)
    assert [a.uid for a in baseline.actuators] == ["env.Actuator-0", "env.Actuator-1"]


@pytest.mark.parametrize("form", ["with sim time", "sensors alone"])
def test_a_start_that_returns_no_pair_fails_naming_the_environment(form: str) -> None:
    """A start returning three items (its sim time behind the pair) was taken as its first
    two, where palaestrAI's environment fails (it unpacks a tuple into two)."""
    env = environment()
    env.env = StartsAs("env", "", 7)
    env.env.form = form
    with pytest.raises(PluginContractError) as caught:
        env.start_world(reset=False)
    text = str(caught.value)
    assert text.startswith(
        "tests.unit.test_environment_parity:StartsAs.start_environment returned ("
    ), text
    assert "expected (sensors, actuators) or an EnvironmentBaseline" in text


def test_a_numpy_done_after_the_first_step_is_read_as_a_bool() -> None:
    env = environment()
    env.env = LateDone("env", "", 7, max_iter=5)
    env.env.late = np.True_
    env.start_world(reset=False)
    env.update({})
    assert env.update({}).done is True
    assert env.out.rows.recorded[-1].done is True


@pytest.mark.parametrize(
    ("flags", "stored"),
    [
        ((np.True_, np.False_), (True, False)),  # numpy's bools, as palaestrAI's use
        ((False, True), (False, True)),
        ((None, None), (None, None)),
    ],
)
def test_terminated_and_truncated_as_bools_or_none_are_stored_as_plain_bools(
    flags: tuple[Any, Any], stored: tuple[Any, Any]
) -> None:
    env = environment()
    env.env = Flagging("env", "", 7, max_iter=2)
    env.env.flags = flags
    env.start_world(reset=False)
    env.update({})
    state = env.update({})
    assert (state.terminated, state.truncated) == stored
    row = env.out.rows.recorded[-1]
    assert (row.terminated, row.truncated) == stored
    assert all(type(flag) in (bool, type(None)) for flag in (row.terminated, row.truncated))


def test_a_sim_time_of_another_class_of_the_same_shape_is_read() -> None:
    class ForeignSimTime:  # palaestrAI's own SimTime, say
        simtime_ticks = 9
        simtime_timestamp = None

    class Foreign(SimTimeEnvironment):
        def update(self, actuators: Any) -> EnvironmentState:
            state = super().update(actuators)
            state.simtime = ForeignSimTime()  # type: ignore[assignment]
            return state

    env = environment()
    env.env = Foreign("env", "", 7, max_iter=3)
    env.start_world(reset=False)
    env.update({})
    assert env.out.rows.recorded[-1].simtime == {"simtime_ticks": 9, "simtime_timestamp": None}


def test_actuators_given_again_on_a_reset_are_used_once(caplog: pytest.LogCaptureFixture) -> None:
    """palaestrAI's random environments append their actuators to ``self.actuators`` on every
    start: the same uid with the same space is used once, with one warning."""
    env = environment()
    for episode in range(3):
        baseline = env.start_world(reset=episode > 0)
        assert [a.uid for a in baseline.actuators] == ["env.Actuator-0", "env.Actuator-1"]
        env.update({"Actuator-1": 4.0})
    warned = [r.getMessage() for r in caplog.records if "more than once" in r.getMessage()]
    assert len(warned) == 1
    assert "SimTimeEnvironment.reset()" in warned[0] and "'Actuator-0', 'Actuator-1'" in warned[0]


def test_an_actuator_given_again_with_another_space_fails() -> None:
    env = environment("tests.plugins.parity_style:ClashingActuatorEnvironment")
    with pytest.raises(PluginContractError, match="returned actuator 'Actuator-0' twice"):
        env.start_world(reset=False)
