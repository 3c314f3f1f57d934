"""The store writer's connection: the database driver itself (sqlite3, psycopg 3), no SQLAlchemy.

The writer is the process a run waits for before its first phase, and SQLAlchemy's import was
about 120 ms of the 160 its start took. Its statements are few and written in SQL (``?`` marks,
made ``%s`` for psycopg); a new store gets the schema as DDL rendered from
:mod:`palaestra.store.tables` for each dialect (``ddl.json``, which a test renders again), with
what the writer needs of each table's columns: which hold JSON and which times. The readers, the
migrations and the exporters keep SQLAlchemy; the values written here are those SQLAlchemy
writes (times on SQLite as its ``DATETIME`` text in UTC, JSON as :func:`json_text`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from functools import cache
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec

from palaestra.core.description.config import check_store_uri_parts, normal_store_uri
from palaestra.core.description.uri import hide_password
from palaestra.core.errors import StoreError
from palaestra.core.nonfinite import from_strict_json, json_text
from palaestra.core.texts import escaped
from palaestra.core.wire.records import BULK, COLUMNS

HEAD = "0010_evaluations"
"""The schema revision of this palaestra's tables (:mod:`palaestra.store.tables`)."""
VERSION_TABLE = "palaestra_alembic_version"
"""The table in which alembic records the store's revision."""
PG_LOCK_KEY = 0x70616C6165737472  # "palaestr"
"""Key of the PostgreSQL advisory lock taken while the schema is created or migrated."""
SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_PAGE_SIZE = 16_384
"""The page size of a SQLite store palaestra creates (SQLite's default is 4,096). The per-step
tables' rows, a few hundred bytes of JSON each, are appended in order: with 16 KiB pages
SQLite's own inserts of a 62,090-step run's rows took 15 % less CPU and the store writer 9 %
(``benchmarks/vector_envs.py``' SQLite floor and StoreWriter figures, N = 64). A store that
exists keeps the page size it has."""
DDL_FILE = Path(__file__).with_name("ddl.json")
"""The schema as the driver creates it (see :func:`palaestra.store.schema.rendered_ddl`)."""


RUN_STATUSES = ("running", "finished", "error", "cancelled")

FLOAT_COLUMNS = {"world_states": ("late_by",), "muscle_actions": ("reward", "objective")}
"""The number (``Float``) columns of the tables whose rows producers send: a NaN in them is
NULL on every store, as SQLite (which has no NaN) stores it; PostgreSQL would keep it, and
its sums (``episode_rewards``) and rows would differ from SQLite's."""
_FLOAT_INDEXES = {
    table: (COLUMNS[table].index(columns[0]), COLUMNS[table].index(columns[-1]))
    for table, columns in FLOAT_COLUMNS.items()
}
"""The indexes of each table's first and last :data:`FLOAT_COLUMNS` (at most two a table)."""


@cache
def ddl() -> dict[str, Any]:
    """``ddl.json``: per dialect the statements that create a store at :data:`HEAD`; per
    table its JSON columns (whether None is SQL NULL) and its time columns."""
    with DDL_FILE.open(encoding="utf-8") as file:
        described: dict[str, Any] = json.load(file)
    return described


def utcnow() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


def json_value(text: str | bytes | bytearray | memoryview) -> Any:
    """Decoded JSON of the store, the strings of non-finite floats read back as floats."""
    value = msgspec.json.decode(text)
    plain = text if isinstance(text, str) else bytes(text).decode()
    if '"inf"' in plain or '"-inf"' in plain or '"nan"' in plain:
        return from_strict_json(value)
    return value


def sqlite_time(value: dt.datetime) -> str:
    """An aware time as SQLAlchemy's SQLite ``DATETIME`` holds it: UTC, without the zone."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class Store:
    """One connection to the store at ``uri`` (SQLite or PostgreSQL through psycopg 3).

    Raises:
        RuntimeConfigError: The URI is one the readers would read otherwise (a SQLite URI's
            query, a port that is no number: :func:`~palaestra.core.description.config.
            check_store_uri_parts`).
        StoreError: The URI is not one of these, the driver is missing, or the store cannot be
            opened.
    """

    def __init__(self, uri: str) -> None:
        uri = normal_store_uri(uri)  # (postgresql:// and postgres:// are psycopg 3's too)
        check_store_uri_parts(uri)
        self.uri = uri
        self.shown = hide_password(uri)
        scheme = uri.partition("://")[0]
        self.dialect = scheme.partition("+")[0]
        if scheme == "sqlite":
            self.errors: Any = sqlite3
        elif scheme == "postgresql+psycopg":
            try:
                import psycopg
            except ImportError as exc:
                raise StoreError(
                    f"store {self.shown}: its database driver is not installed: {exc}"
                ) from exc
            self.errors = psycopg
        else:
            raise StoreError(
                f"store {self.shown}: the store writer takes sqlite:///<file> or "
                "postgresql+psycopg://<user>@<host>:<port>/<database> (psycopg 3)"
            )
        self.file: str | None = None  # a SQLite store's file, and its identity on the disk
        self.identity: tuple[int, int] | None = None
        self.connection: Any = self._connect()
        self._errors()

    def _connect(self) -> Any:
        """A new connection to the store (a :class:`StoreError` where it cannot be opened)."""
        rest = self.uri.partition("://")[2]
        try:
            if self.dialect == "sqlite":
                connection = _sqlite(self.uri, rest)
                self.file = _file_of(connection)
                self.identity = _identity(self.file) if self.file else None
                return connection
            return self.errors.connect(f"postgresql://{rest}")
        except (self.errors.Error, OSError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise StoreError(f"store {self.shown}: cannot open the store: {reason}") from exc

    @classmethod
    def around(cls, connection: Any, dialect: str) -> Store:
        """The store of a driver's connection already open (a transaction is its owner's)."""
        store = cls.__new__(cls)
        store.uri, store.dialect = "", dialect
        store.shown = dialect
        store.connection = connection
        store.errors = sqlite3 if dialect == "sqlite" else __import__("psycopg")
        store._errors()
        return store

    def _errors(self) -> None:
        self.described = ddl()
        self.failures: tuple[type[BaseException], ...] = (self.errors.OperationalError, OSError)
        self.conflict: type[BaseException] = self.errors.IntegrityError

    def close(self) -> None:
        self.connection.close()

    def kept(self) -> str | None:
        """Where a SQLite store's rows are, if its file was removed or replaced while this
        connection wrote it (``git clean``, a clean-up script, ``rm``): its rows live on in the
        file this connection still holds open, but nobody else could read them. They are
        copied whole (SQLite's backup) to the file's path where it is free again, else beside
        it (``<file>.recovered-<pid>``); writes go on there. None: the file is in place (or
        the store is no SQLite file).

        Raises:
            StoreError: The copy cannot be written.
        """
        if self.file is None:
            return None
        try:
            now: tuple[int, int] | None = _identity(self.file)
        except FileNotFoundError:
            now = None
        if now == self.identity:
            return None
        target = self.file if now is None else f"{self.file}.recovered-{os.getpid()}"
        try:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            copy = sqlite3.connect(target)
            try:
                self.connection.backup(copy)
            finally:
                copy.close()
            self.connection.close()
            self.connection = _sqlite(self.uri, "/" + urllib.parse.quote(target))
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"store {self.shown}: its file {self.file} was removed or replaced while the "
                f"run wrote it, and its rows could not be copied to {target}: {exc}"
            ) from exc
        self.file, self.identity = target, _identity(target)
        return target

    @contextlib.contextmanager
    def failing(self, doing: str) -> Iterator[None]:
        """Turn a failure of the store itself (disk full, I/O error, read-only, gone) into a
        :class:`StoreError` naming the store, ``doing`` and what to do about it."""
        try:
            yield
        except self.failures as exc:
            raise StoreError(
                f"store {self.shown}: {doing} failed: {' '.join(str(exc).split())}. "
                f"{store_advice(exc)}"
            ) from exc

    def sql(self, statement: str) -> str:
        """``statement`` with the driver's marks."""
        return statement if self.dialect == "sqlite" else statement.replace("?", "%s")

    @contextlib.contextmanager
    def transaction(self, lock: bool = False, write: bool = True) -> Iterator[Store]:
        """One transaction, committed on leaving (rolled back on any failure, the commit's
        too). On SQLite a ``write`` transaction holds the write lock from its start (``BEGIN
        IMMEDIATE``): the writers of a store take turns, so a transaction that read a row never
        fails to write for another's commit between. On PostgreSQL ``lock`` takes the schema's
        advisory lock, and a connection the server closed (a restart, an idle timeout) is
        opened again first, as SQLAlchemy's pool did."""
        if self.dialect != "sqlite" and self.connection.closed and self.uri:
            self.connection = self._connect()
        try:
            if self.dialect == "sqlite":
                self.connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            elif lock:
                self.execute("SELECT pg_advisory_xact_lock(?)", (PG_LOCK_KEY,))
            yield self
            self.connection.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                self.connection.rollback()
            raise

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run ``statement`` (``?`` marks); its cursor. A text of ``params`` that UTF-8 cannot
        encode (a lone surrogate, which both drivers refuse before the statement runs) is
        written with the surrogate as its escape, ``\\udcff`` (:mod:`palaestra.core.texts`)."""
        try:
            return self.connection.execute(self.sql(statement), params)
        except UnicodeEncodeError:
            return self.connection.execute(self.sql(statement), escaped(params))

    def scalar(self, statement: str, params: Sequence[Any] = ()) -> Any:
        row = self.execute(statement, params).fetchone()
        return None if row is None else row[0]

    def insert(self, table: str, **values: Any) -> int:
        """Insert one row (plain values: JSON and times made the columns' here); its id."""
        names = list(values)
        row = self.values(table, names, tuple(values.values()))
        marks = ", ".join("?" * len(names))
        statement = f"INSERT INTO {table} ({_names(names)}) VALUES ({marks})"
        if self.dialect == "sqlite":  # (RETURNING needs SQLite 3.35)
            return int(self.execute(statement, row).lastrowid)
        return int(self.execute(f"{statement} RETURNING id", row).fetchone()[0])

    def insert_many(self, table: str, columns: Sequence[str], rows: Sequence[Any]) -> None:
        """Insert ``rows`` (each the values of ``columns``, as the driver takes them)."""
        if self.dialect == "postgresql":  # one COPY streams the batch (a round trip a row else)
            statement = f"COPY {table} ({_names(columns)}) FROM STDIN"
            with self.connection.cursor() as cursor, cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
            return
        columns, rows = _without_nulls(columns, rows)
        marks = ", ".join("?" * len(columns))
        self.connection.executemany(
            f"INSERT INTO {table} ({_names(columns)}) VALUES ({marks})", rows
        )

    def add_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` of ``table`` as producers send them (the values of its
        :data:`~palaestra.core.wire.records.COLUMNS`): the per-step tables' as they are (their
        JSON as text already), the others' values made the columns' (:meth:`values`)."""
        columns = COLUMNS[table]
        if table not in BULK:
            rows = [self.values(table, columns, row) for row in rows]
        if self.dialect != "sqlite" and table in _FLOAT_INDEXES:  # (SQLite makes NaN NULL)
            rows = _nan_as_null(rows, _FLOAT_INDEXES[table])
        self.insert_many(table, columns, rows)

    def values(self, table: str, columns: Sequence[str], row: Sequence[Any]) -> tuple[Any, ...]:
        """``row``'s plain values as the driver takes them: JSON as text (None as SQL NULL
        where the column says so), times (aware, or POSIX seconds) as the dialect's."""
        json_columns = self.described["json"].get(table, {})
        times = self.described["times"].get(table, ())
        out = []
        for column, value in zip(columns, row, strict=True):
            if column in json_columns:
                value = None if value is None and json_columns[column] else json_text(value)
            elif column in times and value is not None:
                if not isinstance(value, dt.datetime):  # POSIX seconds
                    value = dt.datetime.fromtimestamp(value, dt.UTC)
                value = self.time(value)
            out.append(value)
        return tuple(out)

    def time(self, value: dt.datetime) -> Any:
        """An aware time as the dialect's time columns take it.

        Raises:
            ValueError: ``value`` is naive.
        """
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the store takes aware UTC times")
        return sqlite_time(value) if self.dialect == "sqlite" else value

    def table_names(self) -> set[str]:
        if self.dialect == "sqlite":
            found = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            found = self.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        return {row[0] for row in found.fetchall()}

    def ensure_current(self) -> None:
        """Create the schema of an empty store; accept one at :data:`HEAD`; refuse any other
        with the :class:`StoreError` that says why (:func:`not_current`).

        Raises:
            StoreError: The store is at another revision, or cannot be read or created.
        """
        try:
            if self._revision() == HEAD:
                self.connection.commit()  # (psycopg began a transaction with the select)
                return
            self.connection.commit()
            with self.transaction(lock=True):  # rechecked: another run may be creating it
                names = self.table_names()
                ours = names & set(self.described["json"]) | names & {VERSION_TABLE}
                if not ours:
                    for statement in self.described[self.dialect]:
                        self.connection.execute(statement)
                    self.execute(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES (?)", (HEAD,))
                    return
                revision = self._revision()
        except (self.errors.Error, OSError) as exc:
            said = " ".join(str(exc).split())
            raise StoreError(
                f"store {self.shown}: cannot create the schema: {said}. {store_advice(exc)}"
            ) from exc
        if revision != HEAD:
            raise not_current(revision, self.shown)

    def _revision(self) -> str | None:
        if VERSION_TABLE not in self.table_names():
            return None
        found = self.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
        if len(found) > 1:
            raise StoreError(
                f"store {self.shown} records several schema revisions: {sorted(found)}"
            )
        return found[0][0] if found else None


def _without_nulls(
    columns: Sequence[str], rows: Sequence[Any]
) -> tuple[Sequence[str], Sequence[Any]]:
    """``columns`` and ``rows`` without the columns that are NULL in every row: no column of
    the store has a default, so each is NULL all the same (a lockstep phase's ``late_by``,
    ``simtime`` where the environment has none, ``stale_policy``), and SQLite binds a None
    through its adapter lookup, as it binds anything but an int, a float, a str or a
    bytearray: the per-step tables' inserts take about a third less CPU without them."""
    if not rows:
        return columns, rows
    width = len(columns)
    null = [k for k in range(width) if all(row[k] is None for row in rows)]
    if not null:
        return columns, rows
    kept = [k for k in range(width) if k not in null]
    if len(kept) < 2:  # (itemgetter of one index gives the value, not a tuple)
        return columns, rows
    return [columns[k] for k in kept], list(map(itemgetter(*kept), rows))


def _nan_as_null(rows: Sequence[tuple[Any, ...]], at: tuple[int, int]) -> Sequence[Any]:
    """``rows`` with a NaN at the indexes ``at`` made None (:data:`FLOAT_COLUMNS`); rows
    without one are kept as they are, and so is ``rows`` where none has one."""
    # (only NaN differs from itself; one comparison a column a row, no call: a row per step)
    j, k = at  # (each table's one or two: see _FLOAT_INDEXES)
    found = [n for n, row in enumerate(rows) if row[j] != row[j] or row[k] != row[k]]
    if not found:
        return rows
    out = list(rows)
    for n in found:
        out[n] = tuple(None if i in at and v != v else v for i, v in enumerate(out[n]))
    return out


def _file_of(connection: sqlite3.Connection) -> str | None:
    """The file of a SQLite connection's main database (None: in memory), as the file system
    names it (a name whose bytes are no UTF-8 with surrogates, as ``os.fsdecode`` gives)."""
    connection.text_factory = bytes
    try:
        found = connection.execute("PRAGMA database_list").fetchone()[2]
    finally:
        connection.text_factory = str
    return os.fsdecode(found) if found else None


def _names(columns: Sequence[str]) -> str:
    """The column list of a statement, each name quoted (``index`` is a keyword)."""
    return ", ".join(f'"{column}"' for column in columns)


def _sqlite(uri: str, rest: str) -> sqlite3.Connection:
    """The SQLite store of ``sqlite:///<file>`` (``sqlite://``: in memory), made writable and
    tuned: WAL, ``synchronous=NORMAL``, foreign keys, a busy timeout.

    Raises:
        StoreError: The file or its directory is read-only.
    """
    path = rest[1:] if rest.startswith("/") else ""  # (sqlite://<host>: in memory, too)
    target = ":memory:"
    if path not in ("", ":memory:"):
        target = str(Path(urllib.parse.unquote(path)).absolute())  # (no ~: as SQLAlchemy's)
        require_writable(Path(target), uri)
    connection = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    tune(connection)
    return connection


def tune(connection: Any) -> None:
    """A busy timeout, WAL, ``synchronous=NORMAL`` and foreign keys on a SQLite connection."""
    connection.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    write_ahead(connection)
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA foreign_keys=ON")


def _identity(path: str) -> tuple[int, int]:
    """A file's device and inode: which file its path names."""
    found = os.stat(path)
    return found.st_dev, found.st_ino


def require_writable(path: Path, uri: str) -> None:
    """Make the directory of a SQLite store file; refuse a file or directory not writable.

    Raises:
        StoreError: Naming the file or directory that is read-only.
    """
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"store {hide_password(uri)}: cannot create the directory {parent}: {exc.strerror}"
        ) from exc
    if path.exists() and not os.access(path, os.W_OK):
        what = f"the store file {path} is read-only"
    elif not os.access(parent, os.W_OK):
        what = f"the directory {parent} of the store is read-only"
    else:
        return
    raise StoreError(
        f"store {hide_password(uri)}: cannot write: {what} (read-only media, or no write "
        "permission). Reading works: experiment-list, experiment-show, results and "
        "palaestra.store.query open the store read-only"
    )


def write_ahead(connection: Any) -> None:
    """Put the store in WAL mode. SQLite refuses the switch at once, without waiting the busy
    timeout, while another connection holds a lock on the file: two runs of a parallel sweep
    that open a new store at the same moment. So it is tried again, for up to the busy
    timeout.

    Raises:
        sqlite3.OperationalError: The store stayed locked, or another failure.
    """
    import random

    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    connection.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")  # (a new, empty file only)
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        _pause(pause * random.uniform(0.5, 1.5))  # (two openers do not keep meeting)
        pause = min(2 * pause, 0.05)


_pause = time.sleep


MIGRATE = "run `palaestra database-migrate`"
VERSIONS = Path(__file__).with_name("migrations") / "versions"
"""The migrations: a file each, named by its revision."""


def not_current(revision: str | None, store: str) -> StoreError:
    """Why a store holding palaestra tables at ``revision`` (not :data:`HEAD`) is refused."""
    if revision is None:
        return StoreError(
            f"store {store} has palaestra tables but no recorded schema revision "
            f"(this palaestra needs {HEAD}): {MIGRATE}"
        )
    if (VERSIONS / f"{revision}.py").is_file():
        return StoreError(
            f"store {store} is at schema revision {revision}, this palaestra needs {HEAD}: "
            f"{MIGRATE}"
        )
    return newer(revision, store)


def newer(revision: str, store: str) -> StoreError:
    return StoreError(
        f"store {store} is at schema revision {revision}, unknown to this palaestra "
        f"(which knows up to {HEAD}): it was written by a newer palaestra; upgrade palaestra"
    )


_ADVICE = (
    (
        ("disk is full", "no space left on device", "could not extend file", "disk full"),
        "Its disk is full: free space on it, or give the run another store_uri.",
    ),
    (
        (
            "connection is lost",
            "server closed the connection",
            "terminating connection",
            "connection refused",
            "consuming input failed",
            "connection to server",
            "connection reset",
            "ssl syscall error",
            "the database system is shutting down",
            "the database system is starting up",
        ),
        "The connection to the database server was lost: the server went away, restarted or "
        "closed it (an administrator, a pooler, an idle timeout). See that it runs and takes "
        "connections, then continue the run with 'palaestra experiment-resume'.",
    ),
    (
        ("readonly database", "read-only", "read only"),
        "The store cannot be written (a read-only file, directory or database): give the run "
        "a store it may write, or another store_uri.",
    ),
    (
        ("database is locked", "lock timeout", "deadlock detected"),
        "Another connection holds a lock on the store: let it finish, or give the run another "
        "store_uri.",
    ),
)


def store_advice(cause: BaseException) -> str:
    """What to do about a failure of the store itself, by what its driver said."""
    if isinstance(cause, OSError) and cause.errno == errno.ENOSPC:
        return _ADVICE[0][1]
    said = str(cause).lower()
    for marks, advice in _ADVICE:
        if any(mark in said for mark in marks):
            return advice
    return "See that the store works (its server, its disk), or give the run another store_uri."
