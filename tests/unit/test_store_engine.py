"""Opening a SQLite store (palaestra.store.engine) while another connection holds its lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from palaestra.core.description.config import check_store_uri_parts, load_runtime_config
from palaestra.core.errors import RuntimeConfigError
from palaestra.store import driver, engine, query
from palaestra.store.writer import StoreWriter

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


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("sqlite:///{tmp}/q?uery.db", "a SQLite store's URI takes no query"),
        ("sqlite:///{tmp}/x.db?timeout=5", "a SQLite store's URI takes no query"),
        ("postgresql://me:secret@127.0.0.1:/test", "its port is no number"),
        ("postgresql://me@[::1]:5x/test", "its port is no number"),
    ],
    ids=["sqlite-question-mark", "sqlite-option", "empty-port", "ipv6-port"],
)
def test_every_reader_and_the_writer_refuse_a_store_uri_alike(
    tmp_path: Path, uri: str, said: str
) -> None:
    """The runtime config, the readers (SQLAlchemy), the migrations and the store writer (the
    database driver) parse a store URI with one rule: a URI one of them would read as another
    store, or refuse, is refused by all, naming it. The writer took an empty port for
    PostgreSQL's default where the readers refused it, and a SQLite URI's query was dropped by
    the readers (the store: the file before the '?') where the writer refused it."""
    uri = uri.format(tmp=tmp_path)
    places = {
        "runtime config": lambda: load_runtime_config(environ={"PALAESTRA_STORE_URI": uri}),
        "readers": lambda: query.runs(store_uri=uri),
        "migrations": lambda: engine.make_engine(uri),
        "store writer": lambda: StoreWriter("store", uri).open(),
    }
    messages = {}
    for place, opening in places.items():
        with pytest.raises(RuntimeConfigError) as caught:
            opening()
        assert caught.value.exit_code == 2
        messages[place] = caught.value.format_message()
    assert len(set(messages.values())) == 1, messages
    assert said in messages["readers"]
    assert "secret" not in messages["readers"]
    assert not list(tmp_path.iterdir())  # nothing made


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql+psycopg://me@db:5432/runs",
        "postgresql+psycopg://me@db/runs",
        "postgresql+psycopg://me:pa:ss/w@db:5432/runs",  # (a password holds ':' and '/')
        "postgresql+psycopg://me:p@[::1]:5433/runs",
        "postgresql+psycopg://[::1]/runs",
        "postgresql+psycopg://db:5432",
        "postgresql+psycopg://db:5432?sslmode=require",
        "postgresql+psycopg://me@db:/runs",
        "postgresql+psycopg://me:pw@db:54x/runs",
        "postgresql+psycopg://me@[::1]:x/runs",
        "postgresql+psycopg://db:?sslmode=require",
    ],
)
def test_the_port_is_read_as_sqlalchemy_reads_it(uri: str) -> None:
    """The rule's port is SQLAlchemy's: a URI it refuses is one SQLAlchemy cannot parse."""
    from sqlalchemy.engine import make_url

    try:
        make_url(uri)
        parsed = True
    except ValueError:
        parsed = False
    try:
        check_store_uri_parts(uri)
        taken = True
    except RuntimeConfigError:
        taken = False
    assert taken == parsed
