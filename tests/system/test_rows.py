"""The rows of a run reach the store: healthy producers keep theirs when another process fails
the run, and a value that cannot be stored fails the run naming who made it, where and when,
keeping every row before it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: rows-run
experiment_uid: rows-tests
seed: 7
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: {environment}
            uid: myenv
            params: {{discrete: true, max_iter: 100000{environment_params}}}
      agents:
        - name: healthy
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: {healthy}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [myenv.0, myenv.1]
          actuators: [myenv.0, myenv.1]
        - name: other
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: {muscle}, params: {{{muscle_params}}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [myenv.5]
          actuators: [myenv.5]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
DUMMY_ENVIRONMENT = "palaestra.environment.dummy_environment:DummyEnvironment"
DUMMY_MUSCLE = "palaestra.agent.dummy_muscle:DummyMuscle"


def run_file(
    workspace: Workspace,
    environment: str = DUMMY_ENVIRONMENT,
    environment_params: str = "",
    muscle: str = DUMMY_MUSCLE,
    muscle_params: str = "",
    healthy: str = f"{DUMMY_MUSCLE}, params: {{}}",
) -> Path:
    path = workspace.path / "run.yml"
    path.write_text(
        RUN.format(
            environment=environment,
            environment_params=environment_params,
            muscle=muscle,
            muscle_params=muscle_params,
            healthy=healthy,
        )
    )
    return path


def steps(workspace: Workspace, sql: str) -> list[int]:
    with sqlite3.connect(workspace.store) as conn:
        return [row[0] for row in conn.execute(sql)]


def agent_steps(workspace: Workspace, agent: str) -> list[int]:
    return steps(
        workspace,
        "select step from muscle_actions join agents on agents.id = muscle_actions.agent_id "
        f"where agents.name = '{agent}' order by step",
    )


def test_healthy_producers_keep_every_row_when_another_muscle_fails(
    workspace: Workspace,
) -> None:
    """The failing Muscle acts 2,499 times: the environment stepped 2,499 times (2 batches of
    1,000 rows and 499 buffered when the run failed), and every transition the healthy Muscle
    completed is stored. It completes a step's transition when the next observation comes,
    before it acts on it: with N calls of its ``propose_actions`` it completed N - 1, or N
    when it was stopped after completing the last one and before acting. (It may be stopped
    before it read the last observation, sent to both Muscles at once: a few milliseconds
    after the other one failed, on a loaded machine; then N is 2,499, not 2,500.)"""
    at = 2500
    calls = workspace.path / "healthy-calls"
    path = run_file(
        workspace,
        muscle="row_probes:FailAtStepMuscle",
        muscle_params=f"at: {at}",
        healthy=f"row_probes:CountingMuscle, params: {{path: '{calls}'}}",
    )

    result = workspace.run("experiment-start", str(path))

    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "row_probes:FailAtStepMuscle.propose_actions" in reason
    assert steps(workspace, "select step from world_states order by step") == list(range(1, at))
    acted = int(calls.read_text())
    assert acted in (at - 1, at)  # it read the observation the other failed on, or not
    healthy = agent_steps(workspace, "healthy")
    assert healthy in (list(range(acted - 1)), list(range(acted)))  # steps count from 0
    assert agent_steps(workspace, "other") == list(range(at - 1))  # before it failed


def test_an_unstorable_sensor_value_fails_the_run_naming_the_environment_step_and_uid(
    workspace: Workspace,
) -> None:
    """Sensor 9 (no agent reads it) has no encoded form at step 1,500: the rows of steps 1 to
    1,499 are stored (one batch of 1,000 was pushed, 499 were buffered with the bad one)."""
    at = 1500
    path = run_file(
        workspace,
        environment="row_probes:OpaqueSensorEnvironment",
        environment_params=f", at: {at}",
    )

    result = workspace.run("experiment-start", str(path))

    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    for part in (
        "Environment-myenv-0",
        "row_probes:OpaqueSensorEnvironment.update",
        "sensor 'myenv.9'",
        f"step {at} ",
        "Opaque",
    ):
        assert part in reason, (part, reason)
        assert part in result.stderr, part
    assert steps(workspace, "select step from world_states order by step") == list(range(1, at))
    assert agent_steps(workspace, "healthy")[-1] >= at - 2


def test_an_unsendable_set_point_fails_the_run_naming_the_muscle_step_and_uid(
    workspace: Workspace,
) -> None:
    """On its 1,500th call (step 1,499) the Muscle sets its actuator to a value with no encoded
    form (and outside the actuator's space): the run fails naming the plug-in method, the set
    point and the step; nothing of that step reaches the environment, and the steps before it
    are stored."""
    at = 1500
    path = run_file(workspace, muscle="row_probes:OpaqueSetpointMuscle", muscle_params=f"at: {at}")

    result = workspace.run("experiment-start", str(path))

    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    for part in (
        "Muscle-other-0",
        "row_probes:OpaqueSetpointMuscle.propose_actions",
        "'myenv.5'",
        f"step {at - 1} ",
        "Opaque",
    ):
        assert part in reason, (part, reason)
    assert steps(workspace, "select step from world_states order by step") == list(range(1, at))
