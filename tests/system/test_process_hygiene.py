"""Processes a plug-in leaves behind never outlive the run, nor decide its outcome."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Workspace, slow_after, wait_until_gone

pytestmark = pytest.mark.timeout(120)

DUMMY_ENV = (
    "name: palaestra.environment.dummy_environment:DummyEnvironment\n"
    "            uid: myenv\n"
    "            params: {discrete: true, max_iter: 10}"
)


def forking_env(how: str) -> str:
    return (
        "name: strays:ForkingEnvironment\n"
        "            uid: myenv\n"
        f"            params: {{discrete: true, max_iter: 10, how: {how}}}"
    )


@pytest.mark.parametrize("how", slow_after(["multiprocessing", "fork", "double-fork"], 2))
def test_a_process_left_running_by_a_plugin_is_killed_and_the_run_finishes(
    workspace: Workspace, how: str
) -> None:
    run_file = workspace.variant("dummy_run.yml", (DUMMY_ENV, forking_env(how)))
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Run 'dummy-run' finished" in result.stdout
    assert workspace.instance_status() == ("finished", "")
    # the probe's environment never steps; the run's two phases each leave one stray
    warnings = [line for line in result.stderr.splitlines() if "was still running" in line]
    assert len(warnings) == 2, result.stderr
    assert all("Environment-myenv-0: a process it started, pid" in w for w in warnings)
    assert all("killed it" in w for w in warnings)
    # and the workspace fixture checks that no process of the run survives


def test_a_process_that_vanishes_leaving_a_stray_is_seen_to_end_and_its_stray_killed(
    workspace: Workspace,
) -> None:
    """The stray holds a copy of every descriptor of the environment's process, its exit
    sentinel pipe included: the executor must see the environment end all the same."""
    run_file = workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, forking_env("fork").replace("how: fork}", "how: fork, vanish: true}")),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr
    assert "Environment-myenv-0 exited with code 3" in result.stderr
    stray = (workspace.path / "stray.pid").read_text()
    # orphaned when the environment's process vanished, it came to the executor (a subreaper)
    assert f"Executor: a process it started, pid {stray} " in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error" and "exited with code 3" in reason


SUBREAPER = textwrap.dedent(
    """
    import os, signal, sys, time
    from palaestra.core.supervision.reaper import become_subreaper, children, take_down_strays

    assert become_subreaper()
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:  # a daemon's double fork: the grandchild is orphaned at once
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.write(w, str(os.getpid()).encode())
            while True:
                time.sleep(3600)
        os._exit(0)
    os.waitpid(middle, 0)
    grandchild = int(os.read(r, 32))
    assert children() == [grandchild], (children(), grandchild)  # re-parented to us
    ended = os.fork()  # a child that ended and was not reaped: reaped without a warning
    if ended == 0:
        os._exit(0)
    os.waitid(os.P_PID, ended, os.WEXITED | os.WNOWAIT)  # it is a zombie now
    killed = take_down_strays("Test")
    assert sorted(killed) == sorted([grandchild, ended]), killed
    assert children() == []
    print("ok", grandchild)
    """
)


def test_an_orphan_comes_to_the_subreaper_which_kills_and_reaps_it(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SUBREAPER],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        survivors = wait_until_gone({proc.pid})
    assert proc.returncode == 0, err
    assert out.startswith("ok ")
    assert err.count("Test: a process it started, pid") == 1, err  # not the zombie
    assert not survivors


KERNEL = """\
import palaestra

print(palaestra.run("variant.yml").exit_code, flush=True)
"""


@pytest.mark.parametrize(
    ("killed", "how"),
    slow_after([("the caller", "double-fork"), ("its executor", "fork")]),
)
def test_a_run_of_the_python_api_leaves_no_process_behind_when_killed(
    workspace: Workspace, killed: str, how: str
) -> None:
    """A notebook's kernel that is killed (or restarted hard) while ``palaestra.run`` runs, or
    the run's executor killed (the OOM killer): a process a plug-in started (here a daemon,
    orphaned at once) ran on for good, and so did palaestra's own Environment process, stuck
    in a plug-in's step. The executor now has an undertaker of its own where no command's
    watches it, as ``experiment-start`` has."""
    import os
    import signal
    import time

    from tests.system.test_failure_matrix import pid_of, poll

    workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, forking_env(how).replace("}", ", hang: true}")),
    )
    (workspace.path / "kernel.py").write_text(KERNEL)
    kernel = workspace.spawn([sys.executable, "kernel.py"])
    stray = workspace.path / "stray.pid"
    assert poll(stray.exists, 30, kernel), "the plug-in never started its process"
    executor = pid_of(workspace, "Executor")
    assert executor is not None

    os.kill(kernel.pid if killed == "the caller" else executor, signal.SIGKILL)
    killed_at = time.monotonic()
    survivors = wait_until_gone(workspace.sessions, 10)
    kernel.communicate(timeout=10)
    assert survivors == [], f"{time.monotonic() - killed_at:.1f} s after the kill"
