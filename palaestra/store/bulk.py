"""Rows inserted through SQLAlchemy's connections (replay's copies, resume, the palaestrAI
export) the way the store writer inserts them: with its driver calls
(:class:`~palaestra.store.driver.Store`) on the connection's driver, in its transaction.

The rows are shaped as producers send them (the values of
:data:`palaestra.core.wire.records.COLUMNS`): those of ``world_states`` and ``muscle_actions``
carry their JSON as text, which goes to the driver as it is; the other tables' values are made
the columns' (JSON text, times). SQLite takes a batch through one prepared statement's
``executemany``; PostgreSQL (psycopg 3) through ``COPY ... FROM STDIN``, one command for the
whole batch where an ``executemany`` pays a round of the protocol per row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError

from palaestra.core.wire.records import COLUMNS
from palaestra.store.driver import Store
from palaestra.store.tables import metadata as METADATA

TABLES: dict[str, Table] = {name: METADATA.tables[name] for name in COLUMNS}
"""The tables of :data:`palaestra.core.wire.records.COLUMNS`, by name."""


DRIVERS = ("pysqlite", "psycopg")
"""The drivers :class:`Store` takes (sqlite3, psycopg 3)."""


def driver_store(connection: Connection) -> Store:
    """The :class:`Store` of ``connection``'s driver connection (in its transaction).

    Raises:
        ValueError: Its driver is not one of :data:`DRIVERS`.
    """
    if connection.dialect.driver not in DRIVERS:
        raise ValueError(f"driver {connection.dialect.driver}: palaestra takes {DRIVERS}")
    return Store.around(connection.connection.driver_connection, connection.dialect.name)


def insert_one(connection: Connection, table: Table, **values: Any) -> int:
    """Insert one row of ``values`` (by column) into ``table``; its id."""
    key = connection.execute(table.insert().values(**values)).inserted_primary_key
    assert key is not None  # (a single-row insert has one)
    return int(key[0])


def insert_rows(connection: Connection, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` of ``table`` (each the values of its :data:`COLUMNS`, as a producer
    shaped them).

    Raises:
        sqlalchemy.exc.DBAPIError: The store refused the rows, or failed (the subclass
            SQLAlchemy gives the driver's error, as for its own statements).
    """
    store = driver_store(connection)
    with as_sqlalchemy_errors(store, table.name):
        store.add_rows(table.name, rows)


def insert_values(
    connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert ``rows`` (tuples of the values of ``columns``, as the driver takes them) into
    ``table``.

    Raises:
        sqlalchemy.exc.DBAPIError: As :func:`insert_rows`.
    """
    if connection.dialect.driver not in DRIVERS:  # (a palaestrAI export's own target)
        marks = ", ".join(
            ["%s" if connection.dialect.paramstyle != "qmark" else "?"] * len(columns)
        )
        statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
        connection.exec_driver_sql(statement, list(rows))
        return
    store = driver_store(connection)
    with as_sqlalchemy_errors(store, table.name):
        store.insert_many(table.name, columns, rows)


@contextmanager
def as_sqlalchemy_errors(store: Store, table: str) -> Iterator[None]:
    """The driver's errors as SQLAlchemy's (``OperationalError`` for a full disk or a lost
    server), as the callers' own statements raise them."""
    try:
        yield
    except store.errors.Error as exc:
        error = store.errors.Error
        raise DBAPIError.instance(f"inserting into {table}", None, exc, error) from exc
