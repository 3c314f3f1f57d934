"""GymnasiumEnvironment without processes: spaces become sensors and actuators, values travel
both ways, the seed makes episodes repeatable, terminated and truncated stay apart, and bad
params, spaces and values are named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation
from palaestra.core.plugin import PluginContractError
from palaestra.core.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from palaestra.environment.checks import GymnasiumStepError
from palaestra.environment.environment import EnvironmentContext
from palaestra.environment.frames import FrameRecordingError
from palaestra.environment.gymnasium import GymnasiumEnvironment
from palaestra.environment.spaces_map import UnmappableSpaceError

PLUGINS = "tests.plugins.gym_plugins"


def started(seed: int = 3, **params: Any) -> GymnasiumEnvironment:
    env = GymnasiumEnvironment(uid="env", **params)
    env.attach(EnvironmentContext(uid="env", worker=0, seed=seed))
    return env


def act(env: GymnasiumEnvironment, **values: Any) -> Any:
    spaces = {leaf.uid: leaf.space for leaf in env.action_leaves}
    return env.update([ActuatorInformation(v, spaces[k], k) for k, v in values.items()])


def test_cartpole_is_a_box_sensor_a_discrete_actuator_and_a_reward() -> None:
    env = started(env_id="CartPole-v1")
    sensors, actuators = env.start_environment()
    assert [(s.uid, type(s.space)) for s in sensors] == [("obs", Box)]
    assert sensors[0].space.shape == (4,)
    assert [(a.uid, a.space) for a in actuators] == [("action", Discrete(2))]
    state = act(env, action=1)
    assert [(r.uid, r.value) for r in state.rewards] == [("reward", 1.0)]
    assert state.done is False and state.terminated is False and state.truncated is False


def test_the_same_seed_gives_the_same_episode_and_another_seed_another() -> None:
    def observations(seed: int) -> list[list[float]]:
        env = started(seed, env_id="CartPole-v1")
        seen = [env.start_environment().sensors_available[0].value.tolist()]
        for step in range(5):
            seen.append(act(env, action=step % 2).sensor_information[0].value.tolist())
        seen.append(env.reset().sensors_available[0].value.tolist())  # the generator goes on
        return seen

    assert observations(3) == observations(3)
    assert observations(3)[0] != observations(4)[0]
    assert observations(3)[0] != observations(3)[-1]


def test_a_time_limit_is_truncated_and_a_hole_is_terminated() -> None:
    cart = started(env_id="CartPole-v1", env_kwargs={"max_episode_steps": 2})
    cart.start_environment()
    assert act(cart, action=0).done is False
    last = act(cart, action=1)
    assert (last.done, last.terminated, last.truncated) == (True, False, True)

    lake = started(env_id="FrozenLake-v1", env_kwargs={"is_slippery": False})
    assert lake.start_environment().sensors_available[0].value == 0
    state = act(lake, action=1)  # down: (1, 0)
    assert state.sensor_information[0].value == 4
    state = act(lake, action=2)  # right: (1, 1), a hole
    assert (state.done, state.terminated, state.truncated) == (True, True, False)
    assert state.rewards[0].value == 0.0


def test_dict_and_tuple_spaces_split_into_named_sensors_and_actuators() -> None:
    env = started(factory=f"{PLUGINS}:make_split")
    sensors, actuators = env.start_environment()
    assert {s.uid: s.space for s in sensors} == {
        "obs.position": Box(-1.0, 1.0, shape=(2,)),
        "obs.cell": Discrete(5),
        "obs.flags.0": MultiBinary(3),
        "obs.flags.1": MultiDiscrete([2, 3]),
    }
    assert {a.uid: a.space for a in actuators} == {
        "action.0": Discrete(3),
        "action.1": Box(0.0, 1.0, shape=()),
    }
    assert all(a.space.contains(a.value) for a in actuators)  # a default set point
    state = act(env, **{"action.0": 2, "action.1": np.array(0.25, dtype=np.float32)})
    sent = env.env.unwrapped.actions[-1]
    assert isinstance(sent, tuple) and sent[0] == 2 and float(sent[1]) == 0.25
    values = {s.uid: s.value for s in state.sensor_information}
    assert values["obs.cell"] == 1 and type(values["obs.cell"]) is int
    assert values["obs.position"].tolist() == [0.5, -0.5]
    assert state.rewards[0].value == 2.0


@pytest.mark.parametrize(
    ("factory", "named"),
    [
        ("make_text", "'obs.note' is a Text space"),
        ("make_graph", "'action' is a Graph space"),
    ],
)
def test_an_unmappable_space_names_the_space_and_the_uid(factory: str, named: str) -> None:
    with pytest.raises(UnmappableSpaceError, match=named) as caught:
        GymnasiumEnvironment(uid="env", factory=f"{PLUGINS}:{factory}")
    assert caught.value.exit_code == 2
    assert "environment 'env'" in str(caught.value)


def test_an_unknown_id_names_the_nearest_registered_ids() -> None:
    with pytest.raises(InvalidInputError) as caught:
        GymnasiumEnvironment(uid="env", env_id="FrozenLak-v1")
    message = str(caught.value)
    assert "params.env_id: no gymnasium id 'FrozenLak-v1'" in message
    assert "nearest registered ids: FrozenLake-v1" in message
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({}, "give exactly one of env_id"),
        ({"env_id": "CartPole-v1", "factory": f"{PLUGINS}:make_split"}, "exactly one"),
        ({"factory": "no_such_module_here:make"}, "cannot import module 'no_such_module_here'"),
        ({"factory": f"{PLUGINS}:nothing"}, "has no callable 'nothing'"),
        ({"factory": f"{PLUGINS}:make_not_an_env"}, "returned object, expected a gymnasium.Env"),
        ({"env_id": "CartPole-v1", "check": "always"}, "params.check: expected one of"),
        ({"env_id": "CartPole-v1", "record_frames": {"every": 0}}, "record_frames.every"),
        ({"env_id": "CartPole-v1", "env_kwargs": [1]}, "params.env_kwargs: expected a mapping"),
        (
            {"env_id": "CartPole-v1", "env_kwargs": {"colour": "red"}},
            r"gymnasium.make\('CartPole-v1', \*\*params.env_kwargs\) refused: TypeError",
        ),
        (
            {"factory": f"{PLUGINS}:make_split", "env_kwargs": {"colour": "red"}},
            r"make_split\(\*\*params.env_kwargs\) refused: TypeError.*'colour'",
        ),
    ],
)
def test_wrong_params_are_named(params: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        env = started(**params)
        env.start_environment()


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("nan", r"returned observation array\(\[0\.5, nan\].*which holds NaN"),
        ("outside", r"array\(\[0\.5, 7\. \].*which is outside its declared bounds"),
        ("shape", r"of shape \(3,\), expected \(2,\)"),
        ("reward", r"returned reward nan, not finite"),
    ],
)
def test_every_step_checking_names_the_step_and_the_value(how: str, problem: str) -> None:
    env = started(factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": how, "at": 3})
    env.check = "every_step"
    env.start_environment()
    act(env, action=0)
    act(env, action=0)
    with pytest.raises(PluginContractError, match=problem) as caught:
        act(env, action=0)
    assert "environment 'env'" in str(caught.value)
    assert "step 3 of episode 0" in str(caught.value)


def test_another_dtype_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    env = started(factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": "dtype", "at": 2})
    env.check = "every_step"
    env.start_environment()
    for _ in range(3):
        act(env, action=0)
    env.reset()
    act(env, action=0)
    act(env, action=0)
    warnings = [r.getMessage() for r in caplog.records if "dtype" in r.getMessage()]
    assert warnings == [
        "environment 'env' (tests.plugins.gym_plugins:make_misbehaving): step 2 of episode 0 "
        "returned observation of dtype float64, but its space's dtype is float32; palaestra "
        "converts it (warned once)"
    ]


def test_first_step_checking_skips_later_steps_and_off_skips_all() -> None:
    first = started(factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": "nan", "at": 1})
    first.start_environment()
    with pytest.raises(PluginContractError, match="step 1 of episode 0"):
        act(first, action=0)
    later = started(factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": "nan", "at": 2})
    later.start_environment()
    act(later, action=0)
    assert np.isnan(act(later, action=0).sensor_information[0].value).any()
    off = started(
        factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": "nan", "at": 1}, check="off"
    )
    off.start_environment()
    assert np.isnan(act(off, action=0).sensor_information[0].value).any()


@pytest.mark.parametrize("check", ["first", "off"])
def test_a_reward_that_is_no_number_on_an_unchecked_step_is_named(check: str) -> None:
    env = started(
        factory=f"{PLUGINS}:make_misbehaving",
        env_kwargs={"how": "vector_reward", "at": 2},
        check=check,
    )
    env.start_environment()
    act(env, action=0)
    with pytest.raises(PluginContractError) as caught:
        act(env, action=0)
    assert (
        "environment 'env' (tests.plugins.gym_plugins:make_misbehaving): step 2 of episode 0 "
        "returned reward array([1., 2.]) (shape (2,), dtype float64), expected a number"
    ) in str(caught.value)


def test_an_environment_that_raises_is_named_with_the_step_and_the_action() -> None:
    env = started(factory=f"{PLUGINS}:make_misbehaving", env_kwargs={"how": "raise", "at": 2})
    env.start_environment()
    act(env, action=1)
    with pytest.raises(GymnasiumStepError) as caught:
        act(env, action=1)
    assert str(caught.value) == (
        "environment 'env' (tests.plugins.gym_plugins:make_misbehaving): step 2 of episode "
        "0 raised ZeroDivisionError: the "
        "simulation diverged (action 1)"
    )
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_an_id_a_module_registers_is_made_with_gymnasiums_module_syntax() -> None:
    env = started(env_id="tests.plugins.gym_registered:PalaestraSplit-v0")
    sensors, actuators = env.start_environment()
    assert sorted(s.uid for s in sensors) == [
        "obs.cell",
        "obs.flags.0",
        "obs.flags.1",
        "obs.position",
    ]
    assert [a.uid for a in actuators] == ["action.0", "action.1"]
    with pytest.raises(InvalidInputError, match="params.env_id: cannot import module 'no_such"):
        started(env_id="no_such_module_here:PalaestraSplit-v0")
    with pytest.raises(InvalidInputError, match="no gymnasium id 'tests.plugins.gym_registered"):
        started(env_id="tests.plugins.gym_registered:NotRegistered-v0")


def test_frames_of_every_nth_episode_are_written(tmp_path: Any) -> None:
    env = started(
        env_id="CartPole-v1",
        env_kwargs={"max_episode_steps": 3},
        record_frames={"every": 2, "dir": str(tmp_path)},
    )
    for _ in range(3):
        env.start_environment()
        for _ in range(3):
            act(env, action=0)
    env.shutdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode-00000.npz", "episode-00002.npz"]
    frames = np.load(tmp_path / "episode-00000.npz")["frames"]
    assert frames.shape[0] == 4 and frames.shape[-1] == 3 and frames.dtype == np.uint8
    assert frames.std() > 0  # a picture, not a blank


def test_record_frames_as_an_empty_mapping_records_every_episode(tmp_path: Any) -> None:
    env = GymnasiumEnvironment(
        uid="env", env_id="CartPole-v1", env_kwargs={"max_episode_steps": 2}, record_frames={}
    )
    env.attach(EnvironmentContext(uid="env", worker=0, seed=3, data_path=str(tmp_path)))
    env.start_environment()
    act(env, action=0)
    act(env, action=0)
    env.shutdown()
    written = tmp_path / "frames" / "env" / "worker-0-seed-3" / "episode-00000.npz"
    assert np.load(written)["frames"].shape[0] == 3


def test_record_frames_of_an_environment_that_renders_nothing_fails(tmp_path: Any) -> None:
    env = started(factory=f"{PLUGINS}:make_no_frames", record_frames={"dir": str(tmp_path)})
    with pytest.raises(FrameRecordingError) as caught:
        env.start_environment()
    assert str(caught.value) == (
        f"environment 'env' ({PLUGINS}:make_no_frames): record_frames: render() returned "
        "None in episode 0, expected an RGB array: the environment does not render frames "
        "with render_mode='rgb_array'"
    )


def test_a_frames_folder_that_cannot_be_written_is_named(tmp_path: Any) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    folder = tmp_path / "taken" / "frames"
    env = started(
        env_id="CartPole-v1",
        env_kwargs={"max_episode_steps": 1},
        record_frames={"dir": str(folder)},
    )
    env.start_environment()
    with pytest.raises(FrameRecordingError) as caught:
        act(env, action=0)
    assert str(caught.value) == (
        "environment 'env' (CartPole-v1): record_frames: cannot write the frames of episode 0 "
        f"to {folder / 'episode-00000.npz'}: Not a directory"
    )
    assert env.shutdown()  # (nothing left to write: no second error)


@pytest.mark.parametrize(
    ("env_id", "sensors", "actuators"),
    [
        ("CartPole-v1", {"obs": Box}, {"action": Discrete}),
        ("FrozenLake-v1", {"obs": Discrete}, {"action": Discrete}),
        ("Pendulum-v1", {"obs": Box}, {"action": Box}),
        (
            "Blackjack-v1",
            {"obs.0": Discrete, "obs.1": Discrete, "obs.2": Discrete},
            {"action": Discrete},
        ),
        ("Taxi-v4", {"obs": Discrete}, {"action": Discrete}),
    ],
)
def test_registered_environments_step_with_sampled_actions(
    env_id: str, sensors: dict[str, type], actuators: dict[str, type]
) -> None:
    env = started(env_id=env_id, check="every_step")
    found_sensors, found_actuators = env.start_environment()
    assert {s.uid: type(s.space) for s in found_sensors} == sensors
    assert {a.uid: type(a.space) for a in found_actuators} == actuators
    for actuator in found_actuators:
        actuator.space.seed(0)
    for _ in range(5):
        state = env.update([type(a)(a.space.sample(), a.space, a.uid) for a in found_actuators])
        assert all(s.space.contains(s.value) for s in state.sensor_information)
        if state.done:
            env.reset()
