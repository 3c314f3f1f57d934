"""Asynchronous environments (``async def`` start_environment, update, reset, shutdown) through
the real CLI: awaited on one loop per environment process, their tasks running between calls,
their failures named, nothing they started left behind."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.conftest import Workspace, finish, slow_after

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: async-run
experiment_uid: async-run
seed: 3
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: async_envs:{environment}
            uid: world
            params: {params}
      agents:
        - name: pusher
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: {muscle}, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [world.t]
          actuators: [world.push]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def run_file(
    ws: Workspace,
    params: str,
    *,
    environment: str = "WorldEnvironment",
    muscle: str = "palaestra.agent.dummy_muscle:DummyMuscle",
    workers: int = 1,
    episodes: int = 2,
) -> Path:
    path = ws.path / "async_run.yml"
    path.write_text(
        RUN.format(
            environment=environment,
            params=params,
            muscle=muscle,
            workers=workers,
            episodes=episodes,
        )
    )
    return path


def with_timeout(ws: Workspace, seconds: int) -> Path:
    config = ws.path / "runtime.yaml"
    config.write_text(f"answer_timeout: {seconds}\n")
    return config


@pytest.mark.parametrize("environment", ["WorldEnvironment", "SyncReturnsCoroutine"])
def test_an_asynchronous_world_runs_and_is_shut_down(
    workspace: Workspace, environment: str
) -> None:
    mark = workspace.path / "shutdown.txt"
    params = f"{{steps: 5, mark: '{mark}'}}"
    path = run_file(workspace, params, environment=environment, workers=2)
    checked = workspace.run("experiment-check-syntax", str(path))
    assert checked.returncode == 0, checked.stderr
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    assert "never awaited" not in result.stderr
    with sqlite3.connect(workspace.store) as conn:
        sensors = conn.execute(
            "select worker, episode, step, sensors, done from world_states "
            "order by worker, episode, step"
        ).fetchall()
        actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
    # the world task answered every step: t counts 1..5 in each episode of each worker
    expected = [
        (worker, episode, step, f'{{"world.t":{step}}}', int(step == 5))
        for worker in (0, 1)
        for episode in (0, 1)
        for step in range(1, 6)
    ]
    assert sensors == expected
    assert actions == 20
    # each worker's environment awaited its async shutdown at the end, and before its second
    # episode (an asynchronous environment is reset as palaestrAI resets it: shutdown, then
    # start); so did the probes of the check and of the start, which take no step
    lines = sorted(mark.read_text().splitlines())
    assert lines == ["worker 0: 0"] * 2 + ["worker 0: 5"] * 2 + ["worker 1: 5"] * 2


def test_an_exception_in_async_update_fails_the_run_naming_it(workspace: Workspace) -> None:
    path = run_file(workspace, "{steps: 5, fail_at: 3}")
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert "Environment-world-0 (async_envs:WorldEnvironment.update)" in first, first
    assert "ValueError: update failed at step 3" in first
    status, reason = workspace.instance_status()
    assert status == "error" and "async_envs:WorldEnvironment.update" in reason


def test_an_async_update_that_hangs_is_named_after_answer_timeout(workspace: Workspace) -> None:
    path = run_file(workspace, "{steps: 5, hang_at: 2}")
    config = with_timeout(workspace, 2)
    result = workspace.run("-c", str(config), "experiment-start", str(path))
    assert result.returncode == 1, result.stderr
    assert result.seconds < 2 + 10
    assert "failed: Environment-world-0: Stuck: Environment-world-0 (pid" in result.stderr
    assert "answer_timeout is 2 s" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error" and reason.startswith("Environment-world-0: Stuck:")


def test_a_world_task_that_dies_fails_the_run_naming_the_task(workspace: Workspace) -> None:
    path = run_file(workspace, "{steps: 5, die_at: 2}")
    config = with_timeout(workspace, 30)  # the task's death is told at once, not timed out
    began = time.monotonic()
    result = workspace.run("-c", str(config), "experiment-start", str(path))
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - began < 25
    first = result.stderr.splitlines()[0]
    assert "Environment-world-0 (async_envs:WorldEnvironment.update)" in first, first
    assert "'WorldEnvironment._world' (world)" in result.stderr
    assert "RuntimeError: the world broke down at step 2" in result.stderr


def test_the_check_refuses_a_muscle_that_palaestra_would_not_await(workspace: Workspace) -> None:
    path = run_file(workspace, "{steps: 5}", muscle="async_envs:AsyncMuscle")
    result = workspace.run("experiment-check-syntax", str(path))
    assert result.returncode == 2, result.stderr
    assert "AsyncMuscle.propose_actions is a coroutine function (async def)" in result.stderr
    assert "palaestra awaits only an Environment's start_environment, update" in result.stderr


@pytest.mark.parametrize("how", slow_after(["failing agent", "SIGINT", "SIGKILL of the executor"]))
def test_children_of_an_async_world_do_not_outlive_the_run(workspace: Workspace, how: str) -> None:
    """The world starts a child process and never ends it: the run ends it (the workspace
    fixture fails the test for any process of the run left behind)."""
    mark = workspace.path / "shutdown.txt"
    if how == "failing agent":
        path = run_file(workspace, "{steps: 5, child: true}", muscle="probes:CrashingMuscle")
        result = workspace.run("experiment-start", str(path))
        assert result.returncode == 1, result.stderr
        return
    path = run_file(workspace, f"{{steps: 100000, child: true, mark: '{mark}'}}", episodes=1)
    proc = workspace.start("experiment-start", str(path))
    wait_for_rows(workspace.store, proc)
    if how == "SIGINT":
        proc.send_signal(signal.SIGINT)
        code, _, err = finish(proc, 60)
        assert code == 130, err
        return
    proc.kill()  # the command: its undertaker kills what its processes started
    finish(proc, 60)


def wait_for_rows(store: Path, proc: object) -> None:
    """Bounded poll until the run has stored a step (the world is running)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(store) as conn:
                if conn.execute("select count(*) from world_states").fetchone()[0]:
                    return
        except sqlite3.OperationalError:
            pass
        time.sleep(0.1)
    pytest.fail("no step was stored within 60 s")


def test_values_not_set_travel_and_are_stored_as_null(workspace: Workspace) -> None:
    """None in a sensor (also of an integer Box with infinite bounds) and in set points a
    Muscle leaves unset is stored as null: never NaN, never an error."""
    path = run_file(
        workspace, "{}", environment="UnsetValues", muscle="async_envs:SetsOnlyTheFirst"
    )
    text = path.read_text().replace("[world.t]", "[world.tap_pos, world.vm]")
    path.write_text(text.replace("[world.push]", "[world.in_service, world.tap_set]"))
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(workspace.store) as conn:
        states = conn.execute(
            "select sensors, setpoints from world_states where episode = 0 order by step"
        ).fetchall()
        first = conn.execute(
            "select sensor_readings, actuator_setpoints from muscle_actions "
            "where episode = 0 order by step limit 1"
        ).fetchone()
    assert states[0] == (
        '{"world.tap_pos":null,"world.vm":[1.5]}',
        '{"world.in_service":1,"world.tap_set":null}',
    )
    assert all("NaN" not in s and "nan" not in s for row in states for s in row)
    assert first == (
        '{"world.tap_pos":null,"world.vm":null}',
        '{"world.in_service":1,"world.tap_set":null}',
    )


def test_an_environment_missing_a_data_file_fails_at_the_check(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "palaestra.environment.dummy_environment:DummyEnvironment",
            "probes:MissingFileEnvironment",
        ),
    )
    result = workspace.run("experiment-check-syntax", str(run_file))
    assert result.returncode == 2, result.stderr
    assert (
        "environment 'myenv' (probes:MissingFileEnvironment) could not start: a file it needs "
        "is not there: /nonexistent/palaestra/data.csv." in result.stderr
    )
    assert "midasctl" not in result.stderr  # MIDAS's advice only for MIDAS's data sets
