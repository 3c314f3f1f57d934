"""PettingZooEnvironment without processes: players' spaces become <player>.obs / .action,
an AEC game tells its players in turn order, takes turns in possible_agents order and ends with
each player's final reward, a Parallel game steps all players at once, and wrong params are
named."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment.environment import EnvironmentContext, EnvironmentState
from palaestra.environment.pettingzoo import PettingZooEnvironment

TICTACTOE = "pettingzoo.classic.tictactoe_v3"
RPS = "pettingzoo.classic.rps_v2"


def started(**params: Any) -> PettingZooEnvironment:
    env = PettingZooEnvironment(uid="game", **params)
    env.attach(EnvironmentContext(uid="game", worker=0, seed=11))
    return env


def move(env: PettingZooEnvironment, **moves: int) -> EnvironmentState:
    """Step with the given players' actions; the others keep their default."""
    actuators = []
    for player in env.players:
        for leaf in env.action_leaves[player]:
            value = moves.get(player, 0)
            actuators.append(ActuatorInformation(value, leaf.space, leaf.uid))
    return env.update(actuators)


def test_tictactoe_players_have_their_own_sensors_and_actuators() -> None:
    env = started(env=TICTACTOE)
    sensors, actuators = env.start_environment()
    spaces = {s.uid: s.space for s in sensors}
    assert sorted(spaces) == [
        "player_1.obs.action_mask",
        "player_1.obs.observation",
        "player_2.obs.action_mask",
        "player_2.obs.observation",
    ]
    assert spaces["player_1.obs.observation"] == Box(0, 1, shape=(3, 3, 2), dtype="int8")
    assert [(a.uid, a.space) for a in actuators] == [
        ("player_1.action", Discrete(9)),
        ("player_2.action", Discrete(9)),
    ]


def test_an_aec_game_tells_its_players_in_turn_order_a_parallel_game_none() -> None:
    """(what the run file's check reads from the probe: every player needs an agent)"""
    aec = started(env=TICTACTOE)
    assert aec.players_taking_turns() == [
        ("player_1", ["player_1.action"]),
        ("player_2", ["player_2.action"]),
    ]
    assert started(env=RPS, api="parallel").players_taking_turns() == []


def test_an_aec_game_takes_turns_and_each_player_gets_its_final_reward() -> None:
    env = started(env=TICTACTOE)
    env.start_environment()
    rewards: list[tuple[str, float]] = []
    states = []
    for cell in (0, 3, 1, 4, 2):  # player_1 fills column 0 ... and wins with its third move
        player = env.players[env.step % 2]
        state = move(env, **{player: cell})
        states.append(state)
        rewards += [(r.uid, r.value) for r in state.rewards]
    assert not any(s.done for s in states)
    board = {s.uid: s.value for s in states[-1].sensor_information}
    assert board["player_1.obs.observation"][:, :, 0].sum() == 3  # three crosses
    ends = [move(env), move(env)]  # PettingZoo steps each player once more, without action
    rewards += [(r.uid, r.value) for s in ends for r in s.rewards]
    assert rewards == [
        ("player_1.reward", 0.0),
        ("player_2.reward", 0.0),
        ("player_1.reward", 0.0),
        ("player_2.reward", 0.0),
        ("player_1.reward", 0.0),
        ("player_2.reward", -1.0),
        ("player_1.reward", 1.0),
    ]
    assert [(s.done, s.terminated, s.truncated) for s in ends] == [
        (False, False, False),
        (True, True, False),
    ]
    env.reset()  # a new game
    assert move(env, player_1=4).done is False


def test_a_turn_out_of_the_games_order_is_named() -> None:
    env = started(env=TICTACTOE)
    env.start_environment()
    env.step = 1  # as if palaestra's turns had gone one ahead of the game's
    with pytest.raises(InvalidInputError) as caught:
        move(env, player_2=0)
    message = str(caught.value)
    assert "PettingZoo selected 'player_1'" in message
    assert "gives the turn to the agent bound to 'player_2'" in message
    assert "possible_agents order ['player_1', 'player_2']" in message


def test_a_parallel_game_steps_everyone_and_ends_truncated() -> None:
    env = started(env=RPS, api="parallel", env_kwargs={"max_cycles": 2})
    sensors, actuators = env.start_environment()
    assert [(s.uid, s.space, s.value) for s in sensors] == [
        ("player_0.obs", Discrete(4), 3),
        ("player_1.obs", Discrete(4), 3),
    ]
    assert [a.uid for a in actuators] == ["player_0.action", "player_1.action"]
    first = move(env, player_0=0, player_1=1)  # rock against paper
    assert {r.uid: r.value for r in first.rewards} == {
        "player_0.reward": -1.0,
        "player_1.reward": 1.0,
    }
    assert {s.uid: s.value for s in first.sensor_information} == {
        "player_0.obs": 1,
        "player_1.obs": 0,
    }
    last = move(env, player_0=2, player_1=2)
    assert (last.done, last.terminated, last.truncated) == (True, False, True)


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({}, "give exactly one of env"),
        ({"env": TICTACTOE, "api": "turns"}, "params.api: expected aec or parallel"),
        ({"env": "pettingzoo.classic.no_such_game"}, "cannot import module"),
        ({"env": TICTACTOE, "api": "parallel"}, "has no callable 'parallel_env'"),
        ({"factory": f"{RPS}:parallel_env"}, "expected a PettingZoo AECEnv for api: aec"),
        ({"env": TICTACTOE, "check": "sometimes"}, "params.check: expected one of"),
        (
            {"env": TICTACTOE, "env_kwargs": {"bogus": 1}},
            r"tictactoe_v3:env\(\*\*params.env_kwargs\) refused: TypeError.*'bogus'",
        ),
        (
            {"factory": f"{RPS}:parallel_env", "api": "parallel", "env_kwargs": {"bogus": 1}},
            r"rps_v2:parallel_env\(\*\*params.env_kwargs\) refused: TypeError.*'bogus'",
        ),
    ],
)
def test_wrong_params_are_named(params: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        started(**params)
