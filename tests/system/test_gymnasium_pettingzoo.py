"""PettingZooEnvironment in whole runs: a Parallel game under Vanilla (both players act every
step, each bound by its sensors and actuators), a missing PettingZoo named with its pip
line before any process starts, and an AEC game with a player no agent drives refused
before any step is played."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Workspace, env_hiding

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: rps-run
experiment_uid: pettingzoo-tests
seed: 4
version: "0.1"
schedule:
  - play:
      environments:
        - environment:
            name: palaestra.environment.pettingzoo:PettingZooEnvironment
            uid: rps
            params: {env: pettingzoo.classic.rps_v2, api: parallel, env_kwargs: {max_cycles: 5}}
      agents:
        - name: left
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [rps.player_0.obs]
          actuators: [rps.player_0.action]
        - name: right
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [rps.player_1.obs]
          actuators: [rps.player_1.action]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 2}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""

BEATS = {0: 2, 1: 0, 2: 1}  # rock beats scissors, paper beats rock, scissors beat paper


def run_file(ws: Workspace) -> Path:
    path = ws.path / "rps.yml"
    path.write_text(RUN)
    return path


def test_a_parallel_game_runs_under_vanilla_with_both_players_each_step(
    workspace: Workspace,
) -> None:
    result = workspace.run("experiment-start", str(run_file(workspace)))
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        rows = conn.execute(
            "select episode, sensors, setpoints, rewards, done from world_states "
            "order by episode, step"
        ).fetchall()
    assert len(rows) == 10 and [bool(r[4]) for r in rows] == [False] * 4 + [True] + [False] * 4 + [
        True
    ]
    for _, sensors, setpoints, rewards, _ in rows:
        moves = json.loads(setpoints)
        left, right = moves["rps.player_0.action"], moves["rps.player_1.action"]
        # each player observes the other's last move
        assert json.loads(sensors) == {"rps.player_0.obs": right, "rps.player_1.obs": left}
        score = json.loads(rewards)
        expected = 0.0 if left == right else (1.0 if BEATS[left] == right else -1.0)
        assert score == {"player_0.reward": expected, "player_1.reward": -expected}


def test_without_pettingzoo_the_run_exits_2_with_the_pip_line(workspace: Workspace) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "palaestra", "experiment-start", str(run_file(workspace))],
        cwd=workspace.path,
        env=env_hiding(workspace, "pettingzoo"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "the environment PettingZooEnvironment needs pettingzoo, which is not installed" in (
        result.stderr
    )
    assert "pip install 'palaestra[gym]'" in result.stderr
    assert not workspace.store.exists()


ONE_PLAYER_DRIVEN = """\
uid: tictactoe-run
experiment_uid: pettingzoo-tests
seed: 4
version: "0.1"
schedule:
  - play:
      environments:
        - environment:
            name: palaestra.environment.pettingzoo:PettingZooEnvironment
            uid: board
            params: {env: pettingzoo.classic.tictactoe_v3, api: aec}
      agents:
        - name: crosses
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [board.player_1.obs.observation]
          actuators: [board.player_1.action]
      simulation:
        name: palaestra.simulation:TakingTurns
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 2}
"""


def test_an_aec_game_with_a_player_no_agent_drives_exits_2_before_any_step(
    workspace: Workspace,
) -> None:
    """Only crosses has an agent: noughts' turns would be played with the default action and
    crosses' set points on them dropped (such a run finished with exit 0)."""
    path = workspace.path / "tictactoe.yml"
    path.write_text(ONE_PLAYER_DRIVEN)
    result = workspace.run("experiment-start", str(path), timeout=60)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{path}:12: schedule[0].play.agents: phase 'play': environment 'board'" in (
        result.stderr
    )
    assert "no agent drives player 'player_2' (board.player_2.action)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not workspace.store.exists()  # found while checking the run file
