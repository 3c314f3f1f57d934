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
    ``closed`` (``>&-``), ``broken`` (a pipe whose reader is gone, as in ``| true``) or
    ``full`` (a file on a full disk: ``/dev/full``); returns the exit code and what came on a
    readable stderr."""
    broken_r, broken_w = os.pipe()
    os.close(broken_r)
    full = os.open("/dev/full", os.O_WRONLY)
    closed = [fd for fd, how in ((1, stdout), (2, stderr)) if how == "closed"]

    def close_fds() -> None:
        for fd in closed:
            os.close(fd)

    def where(how: str) -> int | None:
        return {"pipe": subprocess.PIPE, "broken": broken_w, "full": full, "closed": None}[how]

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
    os.close(full)
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
        [
            ("closed", "pipe"),
            ("full", "pipe"),
            ("broken", "pipe"),
            ("broken", "broken"),
            ("closed", "closed"),
            ("full", "full"),
        ],
        2,
    ),
)
def test_a_run_finishes_whatever_its_console(
    workspace: Workspace, stdout: str, stderr: str
) -> None:
    """A full disk under ``run.yml > run.log`` ended the command at its first line: exit 120,
    "OSError: No space left on device", and no run."""
    code, err = start(
        workspace, stdout, stderr, "-v", "experiment-start", str(EXPERIMENTS / "dummy_run.yml")
    )
    assert code == 0, err
    assert workspace.instance_status() == ("finished", "")
    if stdout == "full" and stderr == "pipe":  # said once, where it can be read
        notice = "palaestra: standard output: No space left on device; the rest is dropped\n"
        assert err.count(notice) == 1, err
        err = err.replace(notice, "")
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


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("results", "dummy-run", "--table", "world_states"), id="results"),
        pytest.param(("experiment-list",), id="experiment-list", marks=pytest.mark.slow),
    ],
)
def test_a_command_whose_output_is_its_product_fails_on_a_full_file(
    workspace: Workspace, args: tuple[str, ...]
) -> None:
    """``palaestra results run > rows.csv`` on a full disk: the rows were lost and the command
    ended with exit 0 and nothing said. A reader that stops early (``| head -1``) is no
    failure."""
    assert workspace.run("experiment-start", str(EXPERIMENTS / "dummy_run.yml")).returncode == 0

    code, err = start(workspace, "full", "pipe", *args)
    assert code == 1, err
    assert err == "Error: standard output: No space left on device: the output is incomplete\n"
    code, err = start(workspace, "broken", "pipe", *args)
    assert (code, err) == (0, "")


def ascii_console(workspace: Workspace, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``palaestra *args`` on a console whose encoding is ASCII (as a latin-1 locale lacks the
    box drawing, ASCII lacks every accent)."""
    env = workspace.env() | {"PYTHONIOENCODING": "ascii"}
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=workspace.path,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_names_a_console_cannot_encode_neither_fail_a_run_nor_change_its_rows(
    workspace: Workspace,
) -> None:
    """A run and an agent named with an umlaut on an ASCII console: the run finished, and the
    command failed at its summary with a UnicodeEncodeError traceback (exit 1); so did
    ``experiment-list`` and ``experiment-show`` (its sparkline of blocks, whatever the names),
    and ``results`` to standard output. The rows piped out are those ``-o`` writes, in
    UTF-8."""
    run_file = workspace.variant(
        "dummy_run.yml", ("uid: dummy-run", "uid: dummy-rün"), ("name: defender", "name: abwehrö")
    )
    for args in (
        ("experiment-start", str(run_file)),
        ("experiment-list",),
        ("experiment-show", "dummy-rün"),
    ):
        done = ascii_console(workspace, *args)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        assert b"Traceback" not in done.stderr + done.stdout
    assert workspace.instance_status() == ("finished", "")
    assert b"dummy-r\\xfcn" in done.stdout and b"abwehr\\xf6" in done.stdout
    assert b"|:    " in done.stdout  # (the trend of one episode a phase, in ASCII)

    piped = ascii_console(workspace, "results", "dummy-rün")
    assert piped.returncode == 0, piped.stderr.decode()
    assert ascii_console(workspace, "results", "dummy-rün", "-o", "rows.csv").returncode == 0
    assert piped.stdout == (workspace.path / "rows.csv").read_bytes()
    assert "abwehrö".encode() in piped.stdout
