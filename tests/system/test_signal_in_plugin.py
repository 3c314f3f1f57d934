"""A plug-in that installs a signal handler in a per-step method is told why it cannot; one that
installs a Ctrl-C handler leaves Ctrl-C to the executor all the same."""

from __future__ import annotations

import os
import signal
import sqlite3

import pytest

from tests.conftest import Workspace, finish, wait_for_mark

pytestmark = pytest.mark.timeout(120)


def test_signal_signal_in_update_fails_the_run_naming_the_method_and_the_reason(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "palaestra.environment.dummy_environment:DummyEnvironment",
            "strays:SignalEnvironment",
        ),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        "Error: run 'dummy-run' failed: Environment-myenv-0 (strays:SignalEnvironment.update): "
        "SignalOffMainThread: signal.signal(SIGUSR1, ...) called in thread "
    )
    assert "runs the per-step methods of Brains, Muscles and Environments in a worker" in first
    assert "Install them in the plug-in's constructor" in first
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "strays:SignalEnvironment.update" in reason and "worker thread" in reason


def test_a_ctrl_c_handler_of_a_plugin_leaves_the_run_to_stop_in_order(
    workspace: Workspace,
) -> None:
    """A Muscle installs ``signal.default_int_handler`` for SIGINT in its constructor; the
    terminal's Ctrl-C (SIGINT to the whole process group) reached its process, which died of a
    ``KeyboardInterrupt`` (a traceback on the console) and lost the rows it had produced. SIGINT
    stays ignored there, with a warning: the run stops as any interrupted run."""
    run_file = workspace.variant(
        "dummy_run.yml",
        ("max_iter: 10}", "max_iter: 100000, step_delay: 0.001}"),
        (
            "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}",
            "muscle: {name: strays:CtrlCMuscle, params: {mark: marked}}",
        ),
    )
    proc = workspace.start("experiment-start", str(run_file))
    wait_for_mark(workspace.path / "marked", proc, 60)
    os.killpg(proc.pid, signal.SIGINT)  # (its session's group: what a terminal does)
    code, _, err = finish(proc, 60)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert (
        "Muscle-defender-0: signal.signal(SIGINT, ...) left SIGINT ignored: in a run's "
        "processes Ctrl-C and a closed terminal (SIGINT, SIGHUP) are the executor's"
    ) in err
    assert workspace.instance_status() == ("cancelled", "interrupted by SIGINT")
    with sqlite3.connect(workspace.store) as conn:
        steps = dict(
            conn.execute(
                "select a.name, count(*) from muscle_actions m join agents a "
                "on a.id = m.agent_id group by a.name"
            )
        )
    assert steps["defender"] >= 20, steps  # (its rows were lost: none)
    assert abs(steps["defender"] - steps["attacker"]) <= 1, steps
