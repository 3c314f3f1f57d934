"""experiment-resume's choices on a store: what is stale, what is refused, which rows of a
resumed instance the run's view keeps (the whole path is in tests/system/test_resume.py)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from palaestra.core.errors import RunFileError
from palaestra.core.limits import STALE_AFTER
from palaestra.experiment.resume import NotResumableError, load_plan
from palaestra.store.rows import _kept, shown_status
from tests.unit.test_store_query import RUN, write_store

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("status", "age", "shown"),
    [
        ("running", 0.0, "running"),
        ("running", STALE_AFTER - 0.5, "running"),
        ("running", STALE_AFTER + 0.5, "stale"),
        ("running", None, "running"),  # recorded before heartbeats: unknown
        ("finished", STALE_AFTER + 60, "finished"),
        ("cancelled", STALE_AFTER + 60, "cancelled"),
    ],
)
def test_a_running_instance_with_an_old_heartbeat_is_stale(
    status: str, age: float | None, shown: str
) -> None:
    beat = None if age is None else NOW - dt.timedelta(seconds=age)
    assert shown_status(status, beat, NOW) == shown


def row(phase: int, episode: int | None, worker: int = 0) -> dict[str, object]:
    found: dict[str, object] = {"phase": phase, "worker": worker}
    return found if episode is None else found | {"episode": episode}


def test_a_continued_instance_keeps_its_completed_episodes_before_the_next_start() -> None:
    done = {(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1), (1, 0, 2)}
    start = (1, 2)  # the next instance began at phase 1, episode 2
    assert _kept(row(0, 1), start, done)
    assert _kept(row(1, 1), start, done)
    assert not _kept(row(1, 2), start, done)  # completed, but the next instance replays it
    assert not _kept(row(1, 3), start, done)  # did not complete
    assert not _kept(row(0, 1, worker=1), start, done)  # that worker did not complete it
    assert _kept(row(0, None), start, done)  # a phase before the start (no episode column)
    assert not _kept(row(1, None), start, done)  # the phase the next instance recorded


@pytest.fixture
def store(tmp_path: Path) -> str:
    return write_store(f"sqlite:///{tmp_path}/palaestra.db")


@pytest.mark.parametrize(
    ("run", "instance", "said"),
    [
        (RUN, None, "instance new of run 'run-q' is finished"),
        ("no-such-run", None, "the store has no run 'no-such-run'"),
        (RUN, "nope", "has no instance 'nope'; its instances: old, new"),
    ],
)
def test_what_cannot_be_resumed_is_refused_with_exit_2(
    store: str, run: str, instance: str | None, said: str
) -> None:
    with pytest.raises(NotResumableError, match=said) as raised:
        load_plan(store, run, instance, 5.0)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize(("run", "instance"), [(RUN, "old"), ("run-q2", None)])
def test_a_failed_or_stale_instance_passes_the_status_check(
    store: str, run: str, instance: str | None
) -> None:
    """``old`` ended in error, ``q2`` is stale (its heartbeat is of 2024): planning goes on to
    read the recorded run file, which these stores' runs do not have (``uid:`` only)."""
    with pytest.raises(RunFileError, match="missing required key 'seed'"):
        load_plan(store, run, instance, 5.0)


def test_a_running_instance_with_a_fresh_heartbeat_is_refused(store: str) -> None:
    database = store.removeprefix("sqlite:///")
    with sqlite3.connect(database) as conn:
        conn.execute(
            "update experiment_run_instances set heartbeat_at = ? where uid = 'q2'",
            (dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" "),),
        )
    with pytest.raises(
        NotResumableError, match="instance q2 of run 'run-q2' is running"
    ) as raised:
        load_plan(store, "run-q2", None, 5.0)
    assert raised.value.exit_code == 2
