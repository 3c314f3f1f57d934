"""Opening a SQLite store (palaestra.store.engine) while another connection holds its lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from palaestra.store import driver, engine

pytestmark = pytest.mark.timeout(60)


def test_a_new_store_locked_by_another_connection_is_opened_once_the_lock_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite refuses the switch to WAL at once while another connection holds a lock (two
    runs of a parallel sweep opening a new store at the same moment): the store is opened
    once the lock passes, not failed as 'database is locked'."""
    path = tmp_path / "palaestra.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (i INTEGER)")
    holder.execute("BEGIN IMMEDIATE")  # the other run's connection, mid-write
    holder.execute("INSERT INTO t VALUES (1)")
    refused = threading.Event()
    pause = driver._pause

    def noted(seconds: float) -> None:
        refused.set()  # the switch was refused: the lock is held
        pause(seconds)

    monkeypatch.setattr(driver, "_pause", noted)
    opened: list[str] = []

    def open_store() -> None:
        store = engine.make_engine(f"sqlite:///{path}")
        with store.connect() as connection:
            opened.append(connection.exec_driver_sql("PRAGMA journal_mode").scalar_one())
        store.dispose()

    opener = threading.Thread(target=open_store)
    opener.start()
    assert refused.wait(30)
    holder.execute("COMMIT")
    opener.join(30)
    holder.close()
    assert opened == ["wal"]
