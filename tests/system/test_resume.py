"""Resume (issue 12, item 7): stale instances of a killed executor, ``experiment-resume``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable

import pytest

from palaestra.core.limits import HEARTBEAT, STALE_AFTER
from tests.conftest import Workspace, wait_until_gone

pytestmark = pytest.mark.timeout(120)


def count(ws: Workspace, sql: str) -> int:
    """``select count(*) ...`` on the store, 0 while it (or the table) does not exist yet."""
    if not ws.store.exists():
        return 0
    try:
        with sqlite3.connect(ws.store, timeout=1.0) as conn:
            (n,) = conn.execute(sql).fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(n)


def poll(condition: Callable[[], object], timeout: float) -> object:
    """Bounded polling: the condition's first truthy value, or None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    return None


def kill_executor(ws: Workspace, proc: subprocess.Popen[str]) -> None:
    """SIGKILL the executor (the CLI process); its children die with it."""
    os.kill(proc.pid, signal.SIGKILL)
    assert wait_until_gone(ws.sessions, 10) == []
    proc.communicate(timeout=5)


def list_status(ws: Workspace) -> str:
    listed = ws.run("experiment-list")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def test_a_killed_executor_leaves_its_instance_stale(workspace: Workspace) -> None:
    run_file = workspace.variant("multiworker_run.yml", ("max_iter: 20", "max_iter: 1000000"))
    proc = workspace.start("experiment-start", str(run_file))
    assert poll(lambda: count(workspace, "select count(*) from world_states"), 30)
    assert "running" in list_status(workspace)  # a live executor beats

    kill_executor(workspace, proc)
    killed_at = time.monotonic()
    assert workspace.instance_status()[0] == "running"  # as the store was left
    assert poll(lambda: "stale" in list_status(workspace), STALE_AFTER + 20)
    assert time.monotonic() - killed_at >= STALE_AFTER - HEARTBEAT - 0.5  # not before it aged
