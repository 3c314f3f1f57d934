"""palaestrAI's built-ins and run-file keys through the real CLI: an environment's ``reward:``
and ``state_transformer:``, an agent's ``filters:``, ``NoneBrain`` and
``AggregateRewardsObjective``, named by their palaestrAI names."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: builtins-run
experiment_uid: builtins-tests
seed: 3
version: "3.4"
schedule:
  - phase_0:
      environments:
        - environment:
            name: builtin_plugins:LevelEnvironment
            uid: lev
            params: {max_iter: 4}
          reward:
            name: builtin_plugins:LevelReward
            params: {scale: 0.5}
          state_transformer:
            name: builtin_plugins:ScaleSensors
            params: {factor: 10}
      agents:
        - name: pusher
          brain: {name: palaestrai.agent:NoneBrain, params: {}}
          muscle: {name: builtin_plugins:PushMuscle, params: {push: 1.0}}
          objective:
            name: palaestrai.agent.aggregate_rewards_objective:AggregateRewardsObjective
            params: {rewards: [level_reward], factor: 2.0}
          sensors: [lev.level]
          actuators: [lev.push]
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 1}
run_config:
  condition:
    name: palaestrai.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


def _rows(workspace: Workspace, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(workspace.store) as conn:
        return conn.execute(sql).fetchall()


def test_reward_state_transformer_and_agent_builtins(workspace: Workspace) -> None:
    path = workspace.path / "run.yml"
    path.write_text(RUN)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    assert workspace.instance_status()[0] == "finished"
    world = _rows(workspace, "select step, sensors, rewards from world_states order by step")
    # the environment's level is 1, 2, 3, 4 (one push of 1.0 a step); the transformer
    # scales what is observed and stored by 10, the reward (0.5 x level) is the environment's
    assert [(s, json.loads(x), json.loads(r)) for s, x, r in world] == [
        (step, {"lev.level": 10.0 * step}, {"level_reward": 0.5 * step}) for step in range(1, 5)
    ]
    actions = _rows(
        workspace,
        "select step, sensor_readings, actuator_setpoints, objective from muscle_actions "
        "order by step",
    )
    # the Muscle saw the transformed readings; the objective is 2 x level_reward
    seen = [(s, json.loads(x), json.loads(a), o) for s, x, a, o in actions]
    assert [row[1] for row in seen] == [{"lev.level": 10.0 * i} for i in range(len(seen))]
    assert all(row[2] == {"lev.push": 1.0} for row in seen)
    assert [row[3] for row in seen if row[3] is not None] == [1.0 * step for step in range(1, 5)]
