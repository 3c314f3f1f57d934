"""Checking a run file has a time limit: a hanging environment is named, never waited for."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.conftest import Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

DUMMY_ENV = (
    "name: palaestra.environment.dummy_environment:DummyEnvironment\n"
    "            uid: myenv\n"
    "            params: {discrete: true, max_iter: 10}"
)


def hanging(workspace: Workspace, where: str, probe_timeout: float) -> tuple[Path, Path]:
    """A run file whose environment hangs once in ``where``, and a runtime config."""
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            DUMMY_ENV,
            "name: strays:HangOnceEnvironment\n"
            "            uid: myenv\n"
            f"            params: {{discrete: true, max_iter: 10, where: {where}}}",
        ),
    )
    config = workspace.path / "runtime.yml"
    config.write_text(f"store_uri: sqlite:///{workspace.store}\nprobe_timeout: {probe_timeout}\n")
    return run_file, config


@pytest.mark.parametrize(
    ("where", "named"),
    slow_after(
        [("init", "its constructor"), ("start", "start_environment()"), ("shutdown", "shutdown()")]
    ),
)
def test_a_hanging_environment_is_killed_at_the_probe_timeout_and_named(
    workspace: Workspace, where: str, named: str
) -> None:
    run_file, config = hanging(workspace, where, probe_timeout=1)
    result = workspace.run("-c", str(config), "experiment-check-syntax", str(run_file), timeout=30)
    assert result.returncode == 0, result.stderr
    assert "variant.yml: OK" in result.stdout
    assert (
        f"environment 'myenv' (strays:HangOnceEnvironment): {named} did not return within 1 s"
        in result.stderr
    )
    assert "probe_timeout" in result.stderr
    assert (workspace.path / f"hung-{where}").exists()  # it did hang


def test_a_run_whose_probe_timed_out_checks_its_ids_when_it_starts(workspace: Workspace) -> None:
    run_file, config = hanging(workspace, "start", probe_timeout=1)
    result = workspace.run("-c", str(config), "experiment-start", str(run_file), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "start_environment() did not return within 1 s" in result.stderr
    assert workspace.instance_status() == ("finished", "")


def wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear in {timeout} s"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("command", "signum", "code", "said"),
    [
        ("experiment-check-syntax", signal.SIGINT, 130, "Interrupted."),
        ("experiment-start", signal.SIGINT, 130, "Interrupted."),
        ("experiment-start", signal.SIGTERM, 143, "Terminated."),
    ],
)
def test_a_signal_while_checking_exits_130_or_143_without_a_traceback(
    workspace: Workspace, command: str, signum: int, code: int, said: str
) -> None:
    run_file, config = hanging(workspace, "init", probe_timeout=600)
    proc = workspace.start("-c", str(config), command, str(run_file))
    try:
        wait_for(workspace.path / "hung-init")  # the probe is stuck in the constructor
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert err.strip() == said
    assert not workspace.store.exists()
    # and the workspace fixture checks that the probe did not survive


def test_probe_timeout_must_be_a_positive_number(workspace: Workspace) -> None:
    config = workspace.path / "runtime.yml"
    config.write_text("probe_timeout: forever\n")
    result = workspace.run("-c", str(config), "runtime-config-show-effective")
    assert result.returncode == 2
    assert "probe_timeout: expected a number of seconds > 0, got 'forever'" in result.stderr
