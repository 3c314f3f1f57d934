"""The two-agent example: PettingZoo's tic-tac-toe under TakingTurns. The players alternate
in the game's order, each agent sets only its own actuator, the final reward of a game
(+1 and -1, or 0 and 0 for a draw) reaches each agent's Muscle with its last step, and the
learning player's test phase plays the table its train phase stored."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(120)


def test_the_players_take_turns_and_each_gets_its_final_reward(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_file = workspace.variant(
        "tictactoe_turns.yml", ("episodes: 3000", "episodes: 4"), ("episodes: 500", "episodes: 2")
    )
    path = [str(EXPERIMENTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, path)))
    result = workspace.run("experiment-start", str(run_file), timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        steps = conn.execute(
            "select w.episode, w.step, w.setpoints, w.rewards, w.done from world_states w "
            "join environments e on e.id = w.environment_id "
            "join experiment_run_phases p on p.id = e.experiment_run_phase_id "
            "where p.name = 'play' order by w.episode, w.step"
        ).fetchall()
        finals = conn.execute(
            "select a.name, m.episode, m.rewards, m.objective from muscle_actions m "
            "join agents a on a.id = m.agent_id "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            "where m.done and p.name = 'play' order by m.episode, a.name"
        ).fetchall()
        loaded = conn.execute(
            "select p.name, a.name, a.loaded_from is not null from agents a "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            "order by p.id, a.name"
        ).fetchall()
        test_games = conn.execute(
            "select count(*) from episodes e join experiment_run_phases p "
            "on p.id = e.experiment_run_phase_id where p.name = 'test'"
        ).fetchone()[0]
    episodes = sorted({row[0] for row in steps})
    assert len(episodes) == 4
    for episode in episodes:
        rows = [row for row in steps if row[0] == episode]
        movers = [next(iter(json.loads(row[2]))) for row in rows]
        expected = ["board.player_1.action", "board.player_2.action"] * len(rows)
        assert movers == expected[: len(rows)]  # the run file's order is the game's
        assert [bool(row[4]) for row in rows] == [False] * (len(rows) - 1) + [True]
        assert 6 <= len(rows) <= 11  # 5 to 9 moves, then one step per player to end it
    by_episode: dict[int, dict[str, float]] = {}
    for name, episode, rewards, objective in finals:
        player = "player_1" if name == "crosses" else "player_2"
        assert json.loads(rewards) == {f"{player}.reward": objective}
        by_episode.setdefault(episode, {})[name] = objective
    for outcome in by_episode.values():
        assert sorted(outcome) == ["crosses", "noughts"]
        assert outcome["crosses"] + outcome["noughts"] == 0.0  # a win and a loss, or a draw
    # the learning player's test phase starts from the table its train phase stored
    assert loaded == [
        ("play", "crosses", 0),
        ("play", "noughts", 0),
        ("test", "crosses", 1),
        ("test", "noughts", 0),
    ]
    assert test_games == 2
