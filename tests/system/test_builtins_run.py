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
          muscle: {name: builtin_plugins:PushMuscle, params: {push: 0.5}}
          objective:
            name: palaestrai.agent.aggregate_rewards_objective:AggregateRewardsObjective
            params: {rewards: [level_reward], factor: 2.0}
          sensors: [lev.level]
          actuators: [lev.push]
          filters:
            - name: palaestrai.agent.filters.merge_steps_filter:MergeStepsFilter
              params: {steps: 2}
            - name: palaestrai.agent:DeltaActionFilter
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
    world = _rows(
        workspace, "select step, sensors, setpoints, rewards from world_states order by step"
    )
    # the Muscle sees two sensors (MergeStepsFilter: level and LAST-1-level), so it pushes
    # 2 x 0.5; DeltaActionFilter adds each push to the last: the set points are 1, 2, 3, 4
    # and the level 1, 3, 6, 10. The transformer scales what is observed and stored by 10;
    # the reward (0.5 x level) is the environment's, before the transformer
    levels = [1.0, 3.0, 6.0, 10.0]
    assert [(s, json.loads(x), json.loads(a), json.loads(r)) for s, x, a, r in world] == [
        (step, {"lev.level": 10 * level}, {"lev.push": float(step)}, {"level_reward": level / 2})
        for step, level in enumerate(levels, start=1)
    ]
    actions = _rows(
        workspace,
        "select step, sensor_readings, actuator_setpoints, objective from muscle_actions "
        "order by step",
    )
    # the store keeps what the world reported, the set points the environment got, and the
    # objective: AggregateRewardsObjective's 2 x level_reward
    assert [(s, json.loads(x), json.loads(a), o) for s, x, a, o in actions] == [
        (step, {"lev.level": 10 * before}, {"lev.push": step + 1.0}, level)
        for step, (before, level) in enumerate(zip([0.0, *levels], levels, strict=False))
    ]


OBJECTIVE_RUN = """\
uid: objective-run
seed: 3
version: "3.4"
schedule:
  - phase_0:
      environments:
        - environment:
            name: builtin_plugins:LevelEnvironment
            uid: lev
            params: {max_iter: 10}
          reward: {name: builtin_plugins:LevelReward, params: {scale: 0.5}}
      agents:
        - name: pusher
          brain: {name: palaestrai.agent.none_brain:NoneBrain}
          muscle: {name: builtin_plugins:PushMuscle, params: {push: 1.0}}
          objective:
            name: palaestrai.agent:AggregateRewardsObjective
            params: {rewards: level_reward, factor: 2.0}
          sensors: [lev.level]
          actuators: [lev.push]
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.experiment:AgentObjectiveTerminationCondition
            params: {pusher: {brain_avg2: 3.5}}
      phase_config: {mode: train, worker: 1, episodes: 2}
"""


def test_an_agents_objective_ends_its_episode(workspace: Workspace) -> None:
    path = workspace.path / "run.yml"
    path.write_text(OBJECTIVE_RUN)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    assert workspace.instance_status()[0] == "finished"
    # the objective is the level (1, 2, 3, ...): the mean of the last two reaches 3.5 with
    # the transition of step 4, so the step after it is the episode's last; the window spans
    # episodes (as palaestrAI's), so the next episode ends after its first step
    world = _rows(workspace, "select episode, step, done from world_states order by id")
    assert world == [(0, step, step == 5) for step in range(1, 6)] + [(1, 1, True)]


BRAIN_FILTER_RUN = """\
uid: brain-filter-run
seed: 3
version: "3.4"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestrai.environment.dummy_environment:DummyEnvironment
            uid: env
            params: {discrete: true, max_iter: 4}
      agents:
        - name: counter
          brain: {name: builtin_plugins:UidsBrain}
          muscle: {name: palaestrai.agent:DummyMuscle, params: {count_upwards: true}}
          objective: {name: palaestrai.agent:DummyObjective}
          sensors: [env.0]
          actuators: [env.0]
          filters:
            - name: builtin_plugins:AddToUpdate
              params: {add: 10}
            - name: palaestrai.agent:MergeStepsFilter
              params: {steps: 2}
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
      phase_config: {mode: train, worker: 1, episodes: 1}
"""


def test_a_users_filter_wraps_the_brains_answers(workspace: Workspace) -> None:
    path = workspace.path / "run.yml"
    path.write_text(BRAIN_FILTER_RUN)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    # DummyBrain answers the Muscle's count + 1 and the filter adds 10: the Muscle counts
    # 10, 21, 32, 43 (without the filter: 0, 1, 2, 3) and sets its actuator to the count
    actions = _rows(workspace, "select actuator_setpoints from muscle_actions order by step")
    assert [json.loads(a)["env.0"] for (a,) in actions] == [10, 21, 32, 43]
    # the store keeps the world's readings; the Brain is told of the sensors the filters
    # make, and its memory holds them (as palaestrAI's)
    readings = _rows(workspace, "select sensor_readings from muscle_actions order by step")
    assert [list(json.loads(r)) for (r,) in readings] == [["env.0"]] * 4
    ((dump,),) = _rows(workspace, "select dump from brain_states")
    assert json.loads(dump) == {
        "sensors": ["env.0", "LAST-1-env.0"],
        "memory": ["env.0", "LAST-1-env.0"],
    }


@pytest.mark.parametrize(
    ("name", "said"),
    [
        # it cannot have told the Brain (no setup_brain): its Muscle's step names it
        (
            "AddsASensor",
            "builtin_plugins:AddsASensor.muscle_pre_process returned the sensors 'env.0', "
            "'extra' for 'env.0' it was given, but does not tell the Brain",
        ),
        # its setup_brain did not tell: the Brain names it when the sensors come
        (
            "AddsASensorSaysNone",
            "builtin_plugins:AddsASensorSaysNone.setup_brain left the Brain 1",
        ),
    ],
)
def test_a_filter_that_changes_the_sensors_behind_the_brains_back_is_named(
    workspace: Workspace, name: str, said: str
) -> None:
    path = workspace.path / "run.yml"
    path.write_text(
        BRAIN_FILTER_RUN.replace("builtin_plugins:AddToUpdate", f"builtin_plugins:{name}")
        .replace("              params: {add: 10}\n", "")
        .replace("            - name: palaestrai.agent:MergeStepsFilter\n", "")
        .replace("              params: {steps: 2}\n", "")
    )
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr
    assert said in result.stderr
    assert workspace.instance_status()[0] == "error"
