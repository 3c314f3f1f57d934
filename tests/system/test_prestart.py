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
import atexit, signal, sys, threading, time
from palaestra.cli import entry
from palaestra.cli.entry import leave


class Torn:
    def __del__(self):  # what the interpreter's teardown would run
        sys.stdout.write(" torn down")


kept = Torn()
atexit.register(lambda: print("atexit ran", end="", flush=True))
sys.stdout.write("buffered ")
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread ended", end=" "))).start()
elif sys.argv[1] in ("SIGINT", "SIGTERM"):  # the signal comes while the command exits
    entry.interrupts.install()
    sys.unraisablehook = entry._unraisable
    atexit.register(lambda: print("still", end=" "))  # runs after the next one, cut short
    atexit.register(lambda: (signal.raise_signal(signal.Signals[sys.argv[1]]), print("cut")))
code = sys.argv[2]
leave(None if code == "none" else int(code) if code.isdigit() else code)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("threads", "code", "status", "out", "err"),
    [
        ("none", "none", 0, "buffered atexit ran", ""),
        ("none", "2", 2, "buffered atexit ran", ""),
        ("none", "130", 130, "buffered atexit ran", ""),
        ("none", "message", 1, "buffered atexit ran", "message\n"),
        # a non-daemon thread: Python's own exit, which waits for it and tears down
        ("thread", "none", 0, "buffered thread ended atexit ran torn down", ""),
        # a signal while the atexit handlers run: it cuts that one short and sets the status
        ("SIGTERM", "none", 143, "buffered still atexit ran", "Terminated.\n"),
        ("SIGINT", "none", 130, "buffered still atexit ran", "Interrupted.\n"),
        ("SIGTERM", "2", 2, "buffered still atexit ran", ""),
    ],
)
def test_leaving_keeps_the_status_the_output_and_atexit_and_skips_the_teardown(
    threads: str, code: str, status: int, out: str, err: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEAVE, threads, code], capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout, done.stderr) == (status, out, err)
