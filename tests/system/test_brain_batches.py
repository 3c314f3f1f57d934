"""Batched Brain input: a Brain with ``thinking_batch`` gets the pending messages of several
Muscles at once, and the run's rows are those of the same Brain thinking message by message.

Three workers feed one Brain whose first ``thinking`` takes a second, so the other Muscles'
messages are pending when it is done (see tests/plugins/batch_brains.py).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.system.test_step_engine import ACTIONS, WORLD, rows

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

DUMMY_BRAIN = "palaestra.agent.dummy_brain:DummyBrain"
WORKERS = ("worker: 2", "worker: 3")


def run_with(ws: Workspace, brain: str, name: str) -> Path:
    run_file = ws.variant("multiworker_run.yml", (DUMMY_BRAIN, brain), WORKERS)
    result = ws.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    return ws.store.rename(ws.path / f"{name}.db")


def thinking_calls(db: Path) -> list[int]:
    """``thinking_calls`` of each dump of the Brain, oldest first."""
    with sqlite3.connect(db) as conn:
        dumps = conn.execute("select dump from brain_states order by id").fetchall()
    return [json.loads(dump)["thinking_calls"] for (dump,) in dumps]


def batch_sizes(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        found = conn.execute("select statistics from statistics where source = 'brain'")
        return [json.loads(values)["batch"] for (values,) in found if "batch" in values]


def test_a_batch_brain_gets_several_muscles_messages_and_gives_the_same_rows(
    workspace: Workspace,
) -> None:
    one_by_one = run_with(workspace, "batch_brains:SlowFirstBrain", "one_by_one")
    batched = run_with(workspace, "batch_brains:BatchBrain", "batched")
    sizes = batch_sizes(batched)
    assert sizes and max(sizes) > 1, sizes  # several Muscles' messages drained together
    assert all(1 < size <= 3 for size in sizes), sizes  # one message per Muscle in a batch
    assert batch_sizes(one_by_one) == []
    for sql in (WORLD, ACTIONS):
        expected = rows(one_by_one, sql)
        assert {row[2] for row in expected} == {0, 1, 2}
        assert rows(batched, sql) == expected
    # every message thought about once: the same number of thinking calls at the end
    assert thinking_calls(batched)[-1] == thinking_calls(one_by_one)[-1]


def test_a_batch_with_too_few_updates_fails_the_run_naming_the_hook(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant(
        "multiworker_run.yml", (DUMMY_BRAIN, "batch_brains:ShortBatchBrain"), WORKERS
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "thinking_batch" in result.stderr
    assert "expected a list of" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error" and "thinking_batch" in reason
