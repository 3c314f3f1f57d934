"""SIGINT and SIGTERM are honoured at every moment of a command (issue 21): while Python
imports the command line, while a run's processes start, while it runs (see
``test_failure_matrix.py``), while it ends (a Brain's last dump), and while a run file's
environment is probed (``test_probe_timeout.py``). Each ends with exit 130 or 143, one line
("Interrupted." or "Terminated."; a run: its summary), no traceback, nothing left running (the
``workspace`` fixture)."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys

import pytest

from tests.conftest import Workspace, finish, slow_after, wait_for_mark
from tests.system.test_failure_matrix import count, pid_of, poll

pytestmark = pytest.mark.timeout(120)

SIGNALS = [
    pytest.param(signal.SIGINT, 130, "Interrupted.", id="SIGINT"),
    pytest.param(signal.SIGTERM, 143, "Terminated.", id="SIGTERM"),
]
DUMMY_BRAIN = "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}"


def _signal_after_import(
    workspace: Workspace, module: str, signum: int
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start the dummy run under ``-X importtime`` (Python reports each import as it finishes)
    and send ``signum`` once ``module``'s import is reported: the command, its stderr, and the
    lines of its stderr that are not import reports."""
    run_file = workspace.variant("dummy_run.yml")
    proc = workspace.spawn(
        [sys.executable, "-X", "importtime", "-m", "palaestra", "experiment-start", str(run_file)]
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if re.search(rf"\|\s+{re.escape(module)}$", line.rstrip()):
            proc.send_signal(signum)
            break
    else:
        pytest.fail(f"{module} was never imported:\n" + "".join(lines[-20:]))
    _, err = proc.communicate(timeout=30)
    return proc, err, [x for x in err.splitlines() if not x.startswith("import time:")]


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
def test_a_signal_while_the_command_line_is_imported(
    workspace: Workspace, signum: int, code: int, said: str
) -> None:
    """The signal comes right after click's import, in the middle of importing palaestra's
    command line."""
    proc, err, said_lines = _signal_after_import(workspace, "click", signum)
    assert proc.returncode == code, err[-3000:]
    assert said_lines == [said]
    assert not workspace.store.exists()


@pytest.mark.parametrize(("signum", "code", "said"), slow_after(SIGNALS))
def test_a_signal_while_the_writer_forked_ahead_imports_its_store_driver(
    workspace: Workspace, signum: int, code: int, said: str
) -> None:
    """The command never imports the store writer's connection (palaestra/store/driver.py): a
    report of its import comes from the writer that ``experiment-start`` forked before it read
    the run file (palaestra/core/supervision/prestart.py). The signal comes then; that child
    ends with the command, which waits for nothing."""
    proc, err, said_lines = _signal_after_import(workspace, "palaestra.store.driver", signum)
    assert proc.returncode == code, err[-3000:]
    name = signal.Signals(signum).name
    cancelled = f"Run 'dummy-run' interrupted by {name}; marked cancelled."
    unrecorded = f"Run 'dummy-run' interrupted by {name} before it started; nothing was recorded."
    assert said_lines[-1:] in ([said], [cancelled], [unrecorded]), said_lines  # (before the
    # run, in it, or in it before its start was recorded)
    if said_lines[-1:] == [cancelled]:
        assert workspace.instance_status() == ("cancelled", f"interrupted by {name}")
    assert "Traceback" not in err and "ignored SIGTERM" not in err


@pytest.mark.parametrize(("signum", "code", "said"), SIGNALS)
def test_a_signal_whose_exception_python_drops_still_ends_the_command(
    workspace: Workspace, signum: int, code: int, said: str
) -> None:
    """The signal comes inside a ``__del__`` while the run file's Brain module is imported:
    Python hands the handler's exception to ``sys.unraisablehook`` and goes on. The command
    knows it all the same (palaestra/core/supervision/interrupts.py): no run starts, and it
    ends as the signal says, nothing printed but its line."""
    brain = "brain: {name: dropped_signal:DroppedSignalBrain, params: {}}"
    run_file = workspace.variant("dummy_run.yml", (DUMMY_BRAIN, brain))
    env = workspace.env()
    env["DROPPED_SIGNAL"] = signal.Signals(signum).name
    proc = workspace.spawn(
        [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)], env=env
    )
    returncode, _, err = finish(proc, 60)
    assert returncode == code, err[-3000:]
    assert err.splitlines() == [said]
    assert not workspace.store.exists()


MOMENTS = [
    pytest.param(
        "brain: {name: crash:MarkedSetupBrain, params: {seconds: 60, mark: marked}}",
        id="while-the-processes-start",
    ),
    pytest.param(  # the phase is over: the Brain dumps, slowly
        "brain: {name: crash:SlowStoreBrain, params: {seconds: 60, mark: marked}}",
        id="while-the-run-ends",
    ),
]


@pytest.mark.parametrize("brain", slow_after(MOMENTS))
@pytest.mark.parametrize(("signum", "code", "said"), slow_after(SIGNALS))
def test_a_signal_while_a_run_starts_or_ends(
    workspace: Workspace, signum: int, code: int, said: str, brain: str
) -> None:
    """The first agent's Brain marks the moment (a file), then takes a minute."""
    run_file = workspace.variant("dummy_run.yml", (DUMMY_BRAIN, brain))
    proc = workspace.start("experiment-start", str(run_file))
    wait_for_mark(workspace.path / "marked", proc, 30)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err[-3000:]
    assert "Traceback" not in err
    status, reason = workspace.instance_status()
    assert status == "cancelled"
    assert reason == f"interrupted by {signal.Signals(signum).name}"


STARTING = """\
import os, sys, time

mark = os.environ.get("STARTING_MARK", "")
if mark and "--multiprocessing-fork" in sys.argv:  # (a child that spawn starts)
    try:
        os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # (the first one waits)
        pass
    else:
        deadline = time.monotonic() + 30
        while not os.path.exists(mark + ".go") and time.monotonic() < deadline:
            time.sleep(0.01)
"""
"""A ``sitecustomize`` that holds the first interpreter spawned for the run in its start-up (at
``import site``) until the test says go."""


@pytest.mark.slow  # (a start method's moment: the slow run has the others)
def test_ctrl_c_while_a_spawned_process_starts(workspace: Workspace) -> None:
    """Under the spawn start method a child is a new interpreter, which raises
    ``KeyboardInterrupt`` on Ctrl-C until palaestra's code in it ignores Ctrl-C: the terminal's
    Ctrl-C (SIGINT to the whole process group) while a phase's processes started printed their
    tracebacks. It is held back in them until then."""
    site = workspace.path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STARTING)
    (workspace.path / "palaestra-runtime.yaml").write_text("start_method: spawn\n")
    run_file = workspace.variant(
        "dummy_run.yml",  # (no probe: it would be the first spawned, in a group of its own)
        ("palaestra.environment.dummy_environment:DummyEnvironment", "probes:UnprobedEnvironment"),
    )
    env = workspace.env()
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    env["STARTING_MARK"] = str(workspace.path / "starting")
    proc = workspace.spawn(
        [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)], env=env
    )
    wait_for_mark(workspace.path / "starting", proc, 60)
    os.killpg(proc.pid, signal.SIGINT)  # (its session's group: what a terminal does)
    (workspace.path / "starting.go").touch()
    code, _, err = finish(proc, 60)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert workspace.instance_status() == ("cancelled", "interrupted by SIGINT")


def test_ctrl_c_before_the_run_is_recorded_says_nothing_was(workspace: Workspace) -> None:
    """Ctrl-C while the store writer waits for a store another connection holds locked: the
    run's start was not asked for yet, and the store has nothing of it. The command said
    "marked cancelled" and where to look, and ``experiment-show`` then found no such run."""
    held = sqlite3.connect(workspace.store, isolation_level=None)
    try:
        held.execute("PRAGMA journal_mode=DELETE")  # (its EXCLUSIVE lock keeps readers out)
        held.execute("BEGIN EXCLUSIVE")
        held.execute("CREATE TABLE held (a)")
        proc = workspace.start("experiment-start", str(workspace.variant("dummy_run.yml")))
        assert poll(lambda: pid_of(workspace, "StoreWriter"), 30, proc), "no writer"
        assert poll(lambda: pid_of(workspace, "Executor"), 30, proc), "no run"
        os.killpg(proc.pid, signal.SIGINT)  # (its session's group: what a terminal does)
    finally:
        held.execute("ROLLBACK")
        held.close()
    code, out, err = finish(proc, 60)
    assert code == 130, err[-3000:]
    said = "Run 'dummy-run' interrupted by SIGINT before it started; nothing was recorded."
    assert err.splitlines()[-1:] == [said], err[-3000:]
    assert "experiment-show" not in out and "Traceback" not in err
    assert count(workspace, "select count(*) from experiment_run_instances") == 0  # (or no table)


@pytest.mark.slow  # (one moment of many: the slow run has the others)
def test_ctrl_c_while_a_failed_run_ends_leaves_its_failure(workspace: Workspace) -> None:
    """A Muscle fails the run; while the run's processes stop (a Brain's slow teardown), Ctrl-C
    comes. The run's end was decided: the command said "Run 'dummy-run' ; marked cancelled."
    (no reason), exited 130, and the store kept the failure or, where its end was not written
    yet, had the run cancelled with no reason (the failure lost). It fails as it did, exit 1."""
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            DUMMY_BRAIN,
            "brain: {name: limit_plugins:SlowTeardownBrain, params: {seconds: 60, mark: marked}}",
        ),
        (
            "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}",
            "muscle: {name: crash:CrashMuscle, params: {}}",
        ),
    )
    proc = workspace.start("experiment-start", str(run_file))
    wait_for_mark(workspace.path / "marked", proc, 30)
    os.killpg(proc.pid, signal.SIGINT)  # (its session's group: what a terminal does)
    code, _, err = finish(proc, 60)
    assert code == 1, err[-3000:]
    failed = "Muscle-defender-0 (crash:CrashMuscle.propose_actions): "
    assert f"Error: run 'dummy-run' failed: {failed}" in err
    assert "marked cancelled" not in err
    status, reason = workspace.instance_status()
    assert status == "error" and reason.startswith(failed), reason
