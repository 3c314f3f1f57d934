"""Children launched elsewhere than by a fork (palaestra/core/supervision/launch.py): a run whose
Brain, Muscles and environments are subprocesses started through ``python -m
palaestra.core.supervision.remote_child`` gives the rows a forked run gives, fails as it fails, and
leaves nothing behind when its executor is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    ROOT,
    Workspace,
    finish,
    step_rows,
    wait_for_mark,
    wait_until_gone,
)

DRIVER = """\
import sys
from palaestra.core.description.config import RuntimeConfig
from palaestra.core.supervision.launch import SubprocessLauncher
from palaestra.experiment.executor import execute
from palaestra.experiment.runfile import load_run_file

run = load_run_file(sys.argv[1])
config = RuntimeConfig(store_uri=sys.argv[2])
roles = None if sys.argv[3] == "all" else sys.argv[3].split(",")
launcher = SubprocessLauncher(host="sub", roles=roles)
launched = []


class Counting:
    def launch(self, spec):
        child = launcher.launch(spec)
        if child is not None:
            launched.append(spec.role)
        return child


placement = None if sys.argv[3] == "none" else Counting()
outcome = execute(run, config, placement=placement)
print("launched", ",".join(sorted(launched)))
print("outcome", outcome.exit_code, outcome.message)
sys.exit(outcome.exit_code)
"""


def _start(ws: Workspace, run_file: Path, store: Path, roles: str) -> subprocess.Popen[str]:
    driver = ws.path / "driver.py"
    driver.write_text(DRIVER)
    return ws.spawn([sys.executable, str(driver), str(run_file), f"sqlite:///{store}", roles])


def _execute(ws: Workspace, run_file: Path, store: Path, roles: str) -> tuple[int, str, str]:
    return finish(_start(ws, run_file, store, roles), 120)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_launched_children_give_the_rows_of_forked_ones(workspace: Workspace) -> None:
    run_file = ROOT / "experiments" / "dummy_run.yml"
    code, _, err = _execute(workspace, run_file, workspace.path / "forked.db", "none")
    assert code == 0, err
    code, out, err = _execute(workspace, run_file, workspace.path / "launched.db", "all")
    assert code == 0, err
    roles = out.split("launched ", 1)[1].split()[0].split(",")
    # two phases: the writer once; per phase a controller, an environment, 2 Brains, 2 Muscles
    assert sorted(set(roles)) == [
        "Brain",
        "Environment",
        "Muscle",
        "SimulationController",
        "StoreWriter",
    ]
    assert len(roles) == 1 + 2 * 6, roles
    states, actions = step_rows(workspace.path / "launched.db")
    assert states and actions
    assert (states, actions) == step_rows(workspace.path / "forked.db")


@pytest.mark.timeout(120)
def test_a_failing_launched_muscle_fails_the_run(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        ("name: palaestra.agent.dummy_muscle:DummyMuscle", "name: crash:CrashMuscle"),
    )
    code, out, err = _execute(workspace, run_file, workspace.store, "Muscle")
    assert code == 1, err
    assert "planned crash in propose_actions" in out
    assert "Muscle-" in out
    status, reason = workspace.instance_status()
    assert status == "error" and "planned crash" in reason


@pytest.mark.timeout(120)
def test_sigkill_of_the_executor_ends_launched_children(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        (
            "params: {discrete: true, max_iter: 10}",
            "params: {discrete: true, max_iter: 1000000, step_delay: 0.001}",
        ),
        (
            "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}",
            "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 20}}",
        ),
    )
    proc = _start(workspace, run_file, workspace.store, "all")
    wait_for_mark(workspace.path / "acting", proc, 60)
    launched = [cmd for pid, cmd in workspace.processes() if pid != proc.pid]
    assert len(launched) >= 5, launched
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert wait_until_gone(workspace.sessions, 5) == []
