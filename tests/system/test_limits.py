"""The limits of a run: the start limit is a setting, and a store writer that stalls (stopped,
or the store locked by someone else) fails the run naming the writer and why, and the end of
the run is still recorded."""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(150)

DUMMY_BRAIN = "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}"
DUMMY_ENV = "name: palaestra.environment.dummy_environment:DummyEnvironment"


def config(workspace: Workspace, text: str) -> str:
    path = workspace.path / "runtime.yaml"
    path.write_text(text)
    return str(path)


# --- start_timeout and stop_timeout --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("brain", "setting", "doing", "plugin_seconds", "under"),
    [
        # 4 s: the store writer must start within it too, a fresh interpreter importing
        # SQLAlchemy under PALAESTRA_START_METHOD=spawn (CI), on a busy machine
        ("SlowBrain", "start_timeout: 4", "start within 4 s", 20, 15),  # (its constructor)
        ("SlowTeardownBrain", "stop_timeout: 2", "stop within 2 s", 30, 25),  # (its teardown)
    ],
    ids=["start", "stop"],
)
def test_a_brain_slower_than_a_limit_fails_naming_the_process_and_setting(
    workspace: Workspace, brain: str, setting: str, doing: str, plugin_seconds: int, under: int
) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            DUMMY_BRAIN,
            f"brain: {{name: limit_plugins:{brain}, params: {{seconds: {plugin_seconds}}}}}",
        ),
    )
    result = workspace.run("-c", config(workspace, setting + "\n"), "start", str(run_file))
    key = setting.split(":")[0]
    assert result.returncode == 1, result.stderr
    assert f"Brain-defender did not {doing}" in result.stderr
    assert key in result.stderr
    assert result.seconds < under  # not the time the plug-in would take
    status, reason = workspace.instance_status()
    assert status == "error"
    assert f"Brain-defender did not {doing}" in reason and key in reason


@pytest.mark.slow
def test_a_slow_constructor_within_start_timeout_runs(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (DUMMY_BRAIN, "brain: {name: limit_plugins:SlowBrain, params: {seconds: 1.5}}"),
    )
    result = workspace.run("-c", config(workspace, "start_timeout: 30\n"), "start", str(run_file))
    assert result.returncode == 0, result.stderr
    assert workspace.instance_status()[0] == "finished"


def slow_start(workspace: Workspace, seconds: int) -> Path:
    """The dummy run, its environment's first ``start_environment()`` taking ``seconds``."""
    return workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, "name: limit_plugins:SlowStartEnvironment"),
        ("params: {discrete: true", f"params: {{seconds: {seconds}, discrete: true"),
    )


def test_an_environment_first_start_is_timed_by_start_timeout(workspace: Workspace) -> None:
    """The first ``start_environment()`` (a co-simulation starting) may take ``start_timeout``,
    as the phase's start it belongs to: longer than ``answer_timeout``, the run failed with
    "Environment-myenv-0: Stuck: ... (answer_timeout is 1 s)"."""
    limits = config(workspace, "answer_timeout: 1\nstart_timeout: 20\n")
    result = workspace.run("-c", limits, "start", str(slow_start(workspace, 3)))
    assert result.returncode == 0, result.stderr[-3000:]
    assert workspace.instance_status()[0] == "finished"


@pytest.mark.slow
def test_an_environment_first_start_longer_than_start_timeout_is_named(
    workspace: Workspace,
) -> None:
    limits = config(workspace, "answer_timeout: 1\nstart_timeout: 3\n")
    result = workspace.run("-c", limits, "start", str(slow_start(workspace, 60)))
    said = (
        "Environment-myenv-0: Timeout: Environment-myenv-0 did not answer its first "
        "start_environment() for "
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert f"Error: run 'dummy-run' failed: {said}" in result.stderr
    assert "(start_timeout is 3 s)" in result.stderr
    assert result.seconds < 25  # not the 60 s of the plug-in
    status, reason = workspace.instance_status()
    assert status == "error" and reason.startswith(said), reason


def test_an_environment_shutdown_slower_than_stop_timeout_is_named(workspace: Workspace) -> None:
    """A synchronous ``shutdown()`` that does not return within ``stop_timeout``: the run
    failed with "Environment-myenv-0 did not stop within 2 s", naming no plug-in. The
    environment's class and ``shutdown()`` are named."""
    run_file = workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, "name: limit_plugins:SlowShutdownEnvironment"),
        ("params: {discrete: true", "params: {seconds: 60, discrete: true"),
    )
    result = workspace.run("-c", config(workspace, "stop_timeout: 2\n"), "start", str(run_file))
    said = (
        "Environment-myenv-0 did not stop within 2 s: its "
        "limit_plugins:SlowShutdownEnvironment.shutdown() did not return (the runtime "
        "config's stop_timeout: raise it if that is too short)"
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert f"Error: run 'dummy-run' failed: Environment-myenv-0: Timeout: {said}" in result.stderr
    assert result.seconds < 25  # not the 60 s of the plug-in
    assert workspace.instance_status() == ("error", f"Environment-myenv-0: Timeout: {said}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("start_timeout: 0\n", "start_timeout: expected a number of seconds > 0, got 0"),
        ("start_timeout: soon\n", "start_timeout: expected a number of seconds > 0, got 'soon'"),
        ("store_timeout: -1\n", "store_timeout: expected a number of seconds > 0, got -1"),
        ("stop_timeout: 0\n", "stop_timeout: expected a number of seconds > 0, got 0"),
        ("start_timeot: 5\n", "unknown setting 'start_timeot'. Did you mean 'start_timeout'?"),
    ],
)
def test_an_invalid_limit_is_refused_naming_the_file_and_key(
    workspace: Workspace, text: str, expected: str
) -> None:
    path = config(workspace, text)
    result = workspace.run("-c", path, "runtime-config-show-effective")
    assert result.returncode == 2
    assert f"{path}: {expected}" in result.stderr
    assert "Traceback" not in result.stderr


# --- a stalled store writer ------------------------------------------------------------


class Watched:
    """A running ``palaestra start``, its stderr read line by line as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stderr is not None
        stderr = proc.stderr
        self.reader = threading.Thread(
            target=lambda: [self.lines.put(x) for x in stderr], daemon=True
        )
        self.reader.start()

    def wait_for_line(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.seen):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and self.lines.empty():
                pytest.fail(f"no line with {text!r} on stderr:\n{''.join(self.seen)[-3000:]}")
            try:
                self.seen.append(self.lines.get(timeout=min(left, 0.5)))
            except queue.Empty:
                pass

    def end(self, timeout: float) -> tuple[int, str]:
        code = self.proc.wait(timeout=timeout)
        assert self.proc.stdout is not None
        self.proc.stdout.read()
        self.reader.join(timeout=10)  # stderr's end
        while not self.lines.empty():
            self.seen.append(self.lines.get_nowait())
        return code, "".join(self.seen)


def gated_run(workspace: Workspace) -> Path:
    return workspace.variant("dummy_run.yml", (DUMMY_ENV, "name: limit_plugins:GatedEnvironment"))


def wait_for_instance(workspace: Workspace, proc: subprocess.Popen[str]) -> None:
    """Until the run's instance row is in the store (the writer is up), at most 30 s."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and proc.poll() is None:
        if workspace.store.exists():
            try:
                with sqlite3.connect(workspace.store, timeout=1.0) as conn:
                    if conn.execute("select count(*) from experiment_run_instances").fetchone()[0]:
                        return
            except sqlite3.OperationalError:  # the schema is still being created
                pass
        time.sleep(0.05)
    pytest.fail("the run did not record its instance within 30 s")


def test_a_run_start_the_writer_answers_too_late_is_recorded_as_failed(
    workspace: Workspace,
) -> None:
    """A writer that records the run's start after store_timeout (a slow store) failed the
    run (exit 1), but the executor recorded no end for a start it had no answer to: the
    writer's row stayed 'running' (later 'stale') instead of 'error' with the reason."""
    path = config(workspace, "store_timeout: 0.001\n")
    result = workspace.run("-c", path, "start", str(EXPERIMENTS / "dummy_run.yml"))
    assert result.returncode == 1, result.stderr
    assert "StoreWriter did not answer" in result.stderr
    with sqlite3.connect(workspace.store) as conn:
        rows = conn.execute("select status, reason from experiment_run_instances").fetchall()
    assert all(status == "error" for status, _ in rows), rows
    assert all("StoreWriter did not answer" in reason for _, reason in rows), rows


def writer_pid(workspace: Workspace) -> int:
    (pid,) = [p for p, cmd in workspace.processes() if cmd == "palaestra[StoreWriter]"]
    return pid


@pytest.mark.slow
@pytest.mark.parametrize("steps", [10, 1_000_000], ids=["at-the-phase-end", "mid-phase"])
def test_a_stopped_writer_fails_the_run_naming_it_and_the_end_is_recorded(
    workspace: Workspace, steps: int
) -> None:
    path = config(workspace, "store_timeout: 2\n")
    run_file = workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, "name: limit_plugins:GatedEnvironment"),
        ("max_iter: 10", f"max_iter: {steps}"),
    )
    proc = workspace.start("-c", path, "start", str(run_file))
    watched = Watched(proc)
    wait_for_instance(workspace, proc)
    os.kill(writer_pid(workspace), signal.SIGSTOP)
    (workspace.path / "gate").touch()
    code, stderr = watched.end(timeout=60)
    assert code == 1, stderr
    # within store_timeout (not answer_timeout, 300 s), whoever notices first names it: the
    # judge of liveness, or the executor's request that the writer did not answer
    status, reason = workspace.instance_status()
    assert status == "error"
    assert f"Error: run 'dummy-run' failed: {reason.splitlines()[0]}" in stderr
    judged = "StoreWriter: Stopped: StoreWriter (pid ", "has been stopped for"
    asked = "StoreWriter: StoreTimeout: StoreWriter did not answer ", "the process is stopped"
    assert any(reason.startswith(first) and second in reason for first, second in (judged, asked))
    assert "store_timeout is 2 s" in reason


@pytest.mark.slow
def test_a_store_locked_by_another_connection_fails_the_run_naming_the_writer_and_the_lock(
    workspace: Workspace,
) -> None:
    path = config(workspace, "store_timeout: 2\n")
    proc = workspace.start("-c", path, "start", str(gated_run(workspace)))
    watched = Watched(proc)
    wait_for_instance(workspace, proc)
    lock = sqlite3.connect(workspace.store, timeout=5.0, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        (workspace.path / "gate").touch()
        # the run fails, the writer is given up on: it records the end itself, and waits
        watched.wait_for_line("recording the end of the run straight into the store", 60)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    code, stderr = watched.end(timeout=60)
    assert code == 3, stderr
    assert "StoreWriter did not answer" in stderr
    assert "the store is locked by another connection (database is locked)" in stderr
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "StoreWriter did not answer" in reason and "locked by another connection" in reason
    assert "(store_timeout is 2 s)" in reason
