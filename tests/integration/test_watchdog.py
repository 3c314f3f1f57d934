"""The parent watchdog works whatever the number of its pipe's file descriptor."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

SCRIPT = textwrap.dedent(
    """
    import multiprocessing.connection, os, select, sys, threading
    from palaestra.core.supervision.processes import watch_parent

    r, w = os.pipe()
    os.dup2(r, 1500)  # a big run's children have more than 1,024 descriptors open
    os.close(r)
    pid = os.fork()
    if pid == 0:
        os.close(w)
        watch_parent(multiprocessing.connection.Connection(1500, writable=False))
        threading.Event().wait()  # only the watchdog can end this
    os.close(1500)
    os.close(w)  # the parent "dies": the child's end of the pipe reads EOF
    fd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(10_000):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.exit("the watchdog did not end the child")
    _, status = os.waitpid(pid, 0)
    print("exit", os.waitstatus_to_exitcode(status))
    """
)


def test_the_watchdog_ends_the_child_when_its_pipe_fd_is_above_1023(tmp_path: Path) -> None:
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= 1500:
        pytest.skip("needs a file limit above 1,500")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "exit 70"
    assert "Traceback" not in proc.stderr
