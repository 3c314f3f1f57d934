"""``experiment-start`` forks its store writer before it reads the run files
(palaestra/core/supervision/prestart.py): the run takes that child as its writer, a later run
of the same command starts its own, and a refused run file ends it without a store or a stray
process. The command's quick exit (palaestra/cli/entry.py:leave) keeps Python's exit status
and what ``atexit`` promises."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import EXPERIMENTS, Workspace, step_rows

AHEAD = re.compile(r"StoreWriter: the child forked ahead of the run \(pid (\d+)\)")
STARTED = re.compile(r"started StoreWriter \(pid (\d+)\)")


@pytest.mark.timeout(120)
def test_the_first_run_takes_the_writer_forked_ahead_the_next_starts_its_own(
    workspace: Workspace,
) -> None:
    (workspace.path / "palaestra-runtime.yaml").write_text("log_level: debug\n")
    result = workspace.run(
        "experiment-start",
        str(EXPERIMENTS / "dummy_run.yml"),
        str(EXPERIMENTS / "taking_turns_run.yml"),
        timeout=100,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ahead = AHEAD.findall(result.stderr)
    started = STARTED.findall(result.stderr)
    assert len(ahead) == 1 and len(started) == 2, (ahead, started)
    assert started[0] == ahead[0] and started[1] != ahead[0]
    assert "still running at its end" not in result.stderr
    states, actions = step_rows(workspace.store)
    assert states and actions


@pytest.mark.timeout(60)
def test_a_refused_run_file_ends_the_writer_forked_ahead_and_writes_no_store(
    workspace: Workspace,
) -> None:
    bad = workspace.variant("dummy_run.yml", ("seed: 42", "seed: forty-two"))
    result = workspace.run("experiment-start", str(bad))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "still running at its end" not in result.stderr
    assert not workspace.store.exists()
    # (the workspace fixture fails the test if any process of the command survived)


LEAVE = """
import atexit, sys, threading, time
from palaestra.cli.entry import leave
atexit.register(lambda: print("atexit ran", flush=True))
sys.stdout.write("buffered ")
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread ended"))).start()
leave(sys.argv[2] if sys.argv[2] != "none" else None)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("threads", "code", "status", "err"),
    [
        ("none", "none", 0, ""),
        ("none", "message", 1, "message\n"),
        ("thread", "none", 0, ""),
    ],
)
def test_leaving_keeps_the_exit_status_the_streams_and_atexit(
    threads: str, code: str, status: int, err: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEAVE, threads, code], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == status
    assert done.stderr == err
    assert done.stdout.startswith("buffered atexit ran") or done.stdout.startswith(
        "buffered thread ended\natexit ran"
    ), done.stdout
