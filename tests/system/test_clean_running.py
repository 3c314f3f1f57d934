"""``palaestra clean`` on a run that is still running (issue 9, defect 16): refused with exit 2,
and the run goes on undisturbed; once it has ended, the run can be deleted."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

LONG = ("params: {discrete: true, max_iter: 10}", "params: {max_iter: 100000, step_delay: 0.001}")


def wait_for_steps(ws: Workspace, proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """Poll the store (bounded) until the run's instance is running and has stored steps;
    returns the instance's uid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended early: {proc.communicate()[1][-3000:]}"
        try:
            with sqlite3.connect(f"file:{ws.store}?mode=ro", uri=True) as conn:
                found = conn.execute(
                    "select i.uid from experiment_run_instances i where i.status = 'running'"
                    " and exists (select 1 from world_states)"
                ).fetchall()
        except sqlite3.OperationalError:  # no store or no tables yet
            found = []
        if found:
            return str(found[0][0])
        time.sleep(0.1)
    pytest.fail(f"the run stored no steps in {timeout} s")


@pytest.mark.slow
def test_clean_refuses_a_running_run_which_then_ends_as_usual(workspace: Workspace) -> None:
    run_file = workspace.variant("dummy_run.yml", LONG)
    proc = workspace.start("start", str(run_file))
    try:
        instance = wait_for_steps(workspace, proc)

        refused = workspace.run("clean", "dummy-run", "--yes")

        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr.startswith(
            f"Error: run 'dummy-run' is still running (instance {instance}, on host "
        )
        assert "--force" in refused.stderr and "Traceback" not in refused.stderr
        assert "Deleted" not in refused.stdout
        assert proc.poll() is None  # the run goes on
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 130, err[-3000:]
    assert "IntegrityError" not in err
    status, reason = workspace.instance_status()
    assert status == "cancelled", reason
    with sqlite3.connect(workspace.store) as conn:
        assert conn.execute("select count(*) from world_states").fetchone()[0] > 0

    deleted = workspace.run("clean", "dummy-run", "--yes")

    assert deleted.returncode == 0, deleted.stderr
    assert "Deleted run 'dummy-run'" in deleted.stdout
