"""The run file's check of a PettingZoo AEC game (its environment started once, by the probe):
every player needs an agent, and under TakingTurns the phase's agents take the players' turns
in the game's order; a Parallel game lets a player no agent drives keep its default."""

from __future__ import annotations

import pytest

from palaestra.core.errors import RunFileError
from palaestra.experiment.runfile import load_run_text

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

RUN = """\
uid: turns
seed: 1
version: "0.1"
schedule:
  - play:
      environments:
        - environment:
            name: palaestra.environment.pettingzoo:PettingZooEnvironment
            uid: board
            params: {{env: pettingzoo.classic.{game}, api: {api}}}
      agents:
{agents}
      simulation:
        name: {simulation}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1}}
"""

AGENT = """\
        - name: {name}
          brain: {{name: palaestra.agent:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent:DummyObjective, params: {{}}}}
          sensors: []
          actuators: [{actuators}]"""

TAKING_TURNS = "palaestra.simulation:TakingTurns"
CROSSES = ("crosses", "board.player_1.action")
NOUGHTS = ("noughts", "board.player_2.action")


def run_text(
    *agents: tuple[str, str],
    simulation: str = TAKING_TURNS,
    game: str = "tictactoe_v3",
    api: str = "aec",
) -> str:
    listed = "\n".join(AGENT.format(name=name, actuators=ids) for name, ids in agents)
    return RUN.format(agents=listed, simulation=simulation, game=game, api=api)


def refused(text: str) -> RunFileError:
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=True)
    return caught.value


@pytest.mark.parametrize(
    "simulation",
    [
        TAKING_TURNS,
        "palaestra.simulation:TakingTurnsSimulationController",  # palaestrAI's name
        "palaestra.simulation:Vanilla",
    ],
)
def test_a_player_no_agent_drives_is_refused_naming_the_phase_the_game_and_the_player(
    simulation: str,
) -> None:
    error = refused(run_text(CROSSES, simulation=simulation))
    assert error.key == "schedule[0].play.agents"
    assert error.message == (
        "phase 'play': environment 'board' is a game whose players take turns ('player_1', "
        "'player_2'), and no agent drives player 'player_2' (board.player_2.action): its turns "
        "would be played with the default action."
    )
    assert error.exit_code == 2


def test_agents_out_of_the_games_order_are_refused_under_taking_turns() -> None:
    error = refused(run_text(NOUGHTS, CROSSES))
    assert error.key == "schedule[0].play.agents[0]"
    assert "under TakingTurns the phase's 2 agents act one per step" in error.message
    assert (
        "agent 'noughts' (the phase's agent 1) takes the turns of 'player_1', but drives none "
        "of the actuators of 'player_1' (board.player_1.action)" in error.message
    )
    assert error.hint is not None and "in the game's order of turns" in error.hint


def test_an_agent_without_a_player_under_taking_turns_is_refused() -> None:
    error = refused(run_text(CROSSES, NOUGHTS, ("watcher", "")))
    assert error.key == "schedule[0].play.agents[0]"  # crosses would take player_2's turns too
    assert "the phase's 3 agents act one per step" in error.message
    assert "takes the turns of 'player_1' and 'player_2'" in error.message


def test_an_agent_driving_a_player_whose_turns_it_never_takes_is_refused() -> None:
    error = refused(run_text(("crosses", f"{CROSSES[1]}, {NOUGHTS[1]}"), NOUGHTS))
    assert error.key == "schedule[0].play.agents[0]"
    assert (
        "drives board.player_2.action, of 'player_2', whose turns it never takes: those set "
        "points would be dropped" in error.message
    )


def test_an_actuator_of_a_player_the_game_does_not_have_is_named() -> None:
    error = refused(run_text(CROSSES, ("third", "board.player_3.action")))
    assert error.key == "schedule[0].play.agents[1].actuators[0]"
    assert error.message == "environment 'board' has no actuator 'board.player_3.action'."


@pytest.mark.parametrize(
    ("agents", "simulation", "game", "api"),
    [
        ((CROSSES, NOUGHTS), TAKING_TURNS, "tictactoe_v3", "aec"),
        ((CROSSES, NOUGHTS), "palaestra.simulation:Vanilla", "tictactoe_v3", "aec"),
        # one agent playing both sides: it acts on every step
        ((("both", f"{CROSSES[1]}, {NOUGHTS[1]}"),), TAKING_TURNS, "tictactoe_v3", "aec"),
        # a Parallel game: a player no agent drives keeps its default, as in gymnasium
        (
            (("left", "board.player_0.action"),),
            "palaestra.simulation:Vanilla",
            "rps_v2",
            "parallel",
        ),
    ],
)
def test_agents_that_take_every_turn_are_accepted(
    agents: tuple[tuple[str, str], ...], simulation: str, game: str, api: str
) -> None:
    text = run_text(*agents, simulation=simulation, game=game, api=api)
    (phase,) = load_run_text(text, path="run.yml", check_classes=True).phases
    assert [agent.name for agent in phase.agents] == [name for name, _ in agents]
