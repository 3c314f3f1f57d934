"""A run that fails ends quickly, says why, marks the store, and leaves no process behind."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)


def test_an_exception_in_thinking_fails_the_run_with_its_reason(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"
            "          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
            "          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: "
            "{params: 1}}\n          sensors: [myenv.5",
            "brain: {name: probes:CrashingBrain, params: {after: 3}}\n"
            "          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
            "          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: "
            "{params: 1}}\n          sensors: [myenv.5",
        ),
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 1
    assert result.seconds < 10
    message = result.stderr
    assert "Brain-attacker" in message
    assert "probes:CrashingBrain.thinking" in message
    assert "ValueError: brain broke after 3 calls" in message
    assert 'raise ValueError(f"brain broke after {self.after} calls")' in message  # traceback
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "probes:CrashingBrain.thinking" in reason and "brain broke after 3 calls" in reason
    with sqlite3.connect(workspace.store) as conn:
        phases = conn.execute('select "index", status from experiment_run_phases').fetchall()
    assert phases == [(0, "error")]


def test_an_exception_in_propose_actions_fails_the_run(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        (
            "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}\n"
            "          objective: {name: palaestra.agent:DummyObjective, params: {}}\n"
            "          sensors: [board.5",
            "muscle: {name: probes:CrashingMuscle, params: {}}\n"
            "          objective: {name: palaestra.agent:DummyObjective, params: {}}\n"
            "          sensors: [board.5",
        ),
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 1
    assert "Muscle-two-0" in result.stderr
    assert "probes:CrashingMuscle.propose_actions" in result.stderr
    assert "RuntimeError: muscle cannot act" in result.stderr
    assert workspace.instance_status()[0] == "error"


def test_a_sensor_the_environment_lacks_is_refused_before_the_run(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "multiworker_run.yml",
        ("sensors: [myenv.0, myenv.1, myenv.2]", "sensors: [myenv.0, myenv.1, myenv.12]"),
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 2
    assert "variant.yml:18: schedule[0].train.agents[0].sensors[2]" in result.stderr
    assert "environment 'myenv' has no sensor 'myenv.12'" in result.stderr
    assert not workspace.store.exists()


def test_ids_of_an_environment_not_probed_are_checked_when_the_run_starts(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant(
        "multiworker_run.yml",
        ("palaestra.environment.dummy_environment:DummyEnvironment", "probes:UnprobedEnvironment"),
        ("actuators: [myenv.0, myenv.1, myenv.2]", "actuators: [myenv.0, myenv.1, myenv.12]"),
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 2
    assert "agent 'learner': actuators myenv.12 are not provided" in result.stderr
    assert workspace.instance_status()[0] == "error"


def test_an_invalid_run_file_is_refused_before_any_process_starts(workspace: Workspace) -> None:
    run_file = workspace.variant("dummy_run.yml", ("episodes: 1", "episodes: -1"))
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 2
    assert "variant.yml:" in result.stderr and "phase_config.episodes" in result.stderr
    assert "Traceback" not in result.stderr
    assert not workspace.store.exists()


def test_a_killed_muscle_fails_the_run_naming_it(workspace: Workspace) -> None:
    import os
    import signal
    import time

    run_file = workspace.variant("multiworker_run.yml", ("max_iter: 20", "max_iter: 1000000"))
    proc = workspace.start("experiment-start", str(run_file))
    deadline = time.monotonic() + 30
    target = None
    while target is None and time.monotonic() < deadline and proc.poll() is None:
        target = next(
            (
                pid
                for pid, cmd in workspace.processes()
                if cmd.startswith("palaestra[Muscle-learner-1]")
            ),
            None,
        )
    assert target is not None, "the muscle never started"
    written = 0
    while written == 0 and time.monotonic() < deadline:  # bounded wait for the first batch
        time.sleep(0.1)
        if workspace.store.exists():
            with sqlite3.connect(workspace.store) as conn:
                try:
                    (written,) = conn.execute("select count(*) from muscle_actions").fetchone()
                except sqlite3.OperationalError:
                    written = 0
    assert written > 0, "no rows reached the store"
    os.kill(target, signal.SIGKILL)
    killed_at = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert time.monotonic() - killed_at < 10
    assert "Muscle-learner-1 was killed by SIGKILL" in err
    status, reason = workspace.instance_status()
    assert status == "error" and "Muscle-learner-1 was killed by SIGKILL" in reason
    with sqlite3.connect(workspace.store) as conn:
        (kept,) = conn.execute("select count(*) from muscle_actions").fetchone()
    assert kept >= written  # what was written before the crash is kept
    with sqlite3.connect(workspace.store) as conn:
        groups = conn.execute(
            "select worker, episode, count(*), min(step), max(step) from muscle_actions "
            "group by worker, episode"
        ).fetchall()
    for worker, episode, count, first, last in groups:  # whole batches: no holes
        assert (first, last) == (0, count - 1), (worker, episode, count, first, last)


@pytest.mark.parametrize("strict", [True, False])
def test_a_load_in_phase_0_naming_no_phase_fails_if_strict_and_warns_if_not(
    workspace: Workspace, strict: bool
) -> None:
    """Phase 0 has no phase before it, the default of ``load``'s ``phase``: the load found
    nothing to load and said nothing, even with ``strict: true`` (the run finished, exit 0,
    its agent trained from scratch)."""
    load = f"load: {{agent: defender, experiment_run: other-run, strict: {str(strict).lower()}}}"
    run_file = workspace.variant(
        "dummy_run.yml",
        ("          sensors: [myenv.0,", f"          {load}\n          sensors: [myenv.0,"),
    )
    result = workspace.run("experiment-start", str(run_file))
    said = (
        "agent 'defender' in phase 0: its load: names no phase, and there is no phase before "
        "phase 0 to take (give load: {phase: N}, the phase of run 'other-run' to load from)"
    )
    assert said in result.stderr, result.stderr[-3000:]
    if strict:
        assert result.returncode == 1
        assert workspace.instance_status()[0] == "error"
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"{said}; it starts fresh" in result.stderr
