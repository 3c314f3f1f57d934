"""A run's outcome does not depend on its console: closed or broken stdout and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.conftest import EXPERIMENTS, Workspace, slow_after

pytestmark = pytest.mark.timeout(120)


def start(workspace: Workspace, stdout: str, stderr: str, *args: str) -> tuple[int, str]:
    """Run ``palaestra *args`` with stdout/stderr each ``pipe`` (read by the test),
    ``closed`` (``>&-``) or ``broken`` (a pipe whose reader is gone, as in ``| true``);
    returns the exit code and what came on a readable stderr."""
    broken_r, broken_w = os.pipe()
    os.close(broken_r)
    closed = [fd for fd, how in ((1, stdout), (2, stderr)) if how == "closed"]

    def close_fds() -> None:
        for fd in closed:
            os.close(fd)

    def where(how: str) -> int | None:
        return {"pipe": subprocess.PIPE, "broken": broken_w, "closed": None}[how]

    preexec: Callable[[], None] | None = close_fds if closed else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "palaestra", *args],
        cwd=workspace.path,
        env=workspace.env(),
        stdout=where(stdout),
        stderr=where(stderr),
        text=True,
        start_new_session=True,
        preexec_fn=preexec,  # noqa: PLW1509 - closing fds only, before exec
    )
    workspace.sessions.add(proc.pid)
    os.close(broken_w)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"palaestra {' '.join(args)} did not end in 60 s")
    return proc.returncode, err or ""


@pytest.mark.parametrize(
    ("stdout", "stderr"),
    slow_after(
        [("closed", "pipe"), ("broken", "pipe"), ("broken", "broken"), ("closed", "closed")]
    ),
)
def test_a_run_finishes_whatever_its_console(
    workspace: Workspace, stdout: str, stderr: str
) -> None:
    code, err = start(
        workspace, stdout, stderr, "-v", "experiment-start", str(EXPERIMENTS / "dummy_run.yml")
    )
    assert code == 0, err
    assert workspace.instance_status() == ("finished", "")
    assert "Traceback" not in err and "Error" not in err and "Exception" not in err


def test_a_failed_run_still_fails_with_its_exit_code_on_a_broken_console(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}",
            "muscle: {name: probes:CrashingMuscle, params: {}}",
        ),
    )
    code, _ = start(workspace, "broken", "broken", "experiment-start", str(run_file))
    assert code == 1
    status, reason = workspace.instance_status()
    assert status == "error" and "muscle cannot act" in reason
