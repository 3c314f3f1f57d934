"""Two environments of one phase that name a reward alike (one class used twice, each giving
``reward``): every step's ``muscle_actions`` row keeps both rewards, its total and the
episode's reward count both, and ``palaestra export palaestrai`` writes both, as palaestrAI
keeps them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from palaestra.store import rows
from tests.conftest import Workspace
from tests.system.curve_runs import invoke

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: reward-names
experiment_uid: reward-names
seed: 5
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestra.environment.cartpole:CartPole
            uid: pole
            params: {max_steps: 6}
        - environment:
            name: palaestra.environment.cartpole:CartPole
            uid: other
            params: {max_steps: 9}
      agents:
        - name: player
          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: games:LinearMuscle, params: {weights: [0, 0, 1, 1]}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [pole.state]
          actuators: [pole.push]
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
BOTH = [{"uid": "reward", "value": 1.0}, {"uid": "reward", "value": 1.0}]
REWARD = "palaestrai.agent.reward_information.RewardInformation"


def test_two_environments_naming_a_reward_alike_keep_both(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = workspace.path / "run.yml"
    path.write_text(RUN)
    result = workspace.run("experiment-start", "-q", str(path), timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    store = workspace.store_uri

    # each environment's own row: one reward of that name
    world = rows.world_states("reward-names", store_uri=store)
    assert world and {json.dumps(r["rewards"]) for r in world} == {'{"reward": 1.0}'}
    # the agent's: both, in the phase's order of environments, and both counted
    actions = rows.muscle_actions("reward-names", store_uri=store)
    assert len(actions) == 12  # (the shorter environment ends each episode: 6 steps)
    assert [r["rewards"] for r in actions] == [BOTH] * 12
    assert {(r["reward"], r["objective"]) for r in actions} == {(2.0, 2.0)}
    episodes = rows.episodes("reward-names", store_uri=store)
    assert [r["rewards"] for r in episodes] == [{"player": 12.0}] * 2
    summed = rows.episode_rewards("reward-names", store_uri=store)
    assert [r["reward"] for r in summed] == [12.0, 12.0]

    # palaestrAI's store: two reward objects named ``reward`` a step, as palaestrAI writes
    target = tmp_path / "palaestrai.db"
    exported = invoke(
        workspace, "export", "palaestrai", "reward-names", "--to", f"sqlite:///{target}"
    )
    assert exported.exit_code == 0, exported.output
    with sqlite3.connect(target) as db:
        written = [
            json.loads(text) for (text,) in db.execute("select rewards from muscle_actions")
        ]
    assert len(written) == 12
    for infos in written:
        assert [i["py/object"] for i in infos] == [REWARD, REWARD]
        assert [(i["py/state"]["uid"], i["py/state"]["value"]) for i in infos] == [
            ("reward", 1.0),
            ("reward", 1.0),
        ]
