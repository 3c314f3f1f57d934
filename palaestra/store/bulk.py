"""Bulk inserts of the per-step tables: rows as ready tuples, one statement per batch.

Producers send ``world_states`` and ``muscle_actions`` rows shaped for the insert
(:class:`~palaestra.core.messages.StoreRows`: the values in the order of
:data:`palaestra.core.records.STORE_COLUMNS`, JSON columns as the text the store's engines
write, see :func:`palaestra.core.nonfinite.json_text`), so the writer hands them to the driver
as they arrived, in its transaction: no value passes SQLAlchemy's bind processors (about three
quarters of what the writer spent per row before). SQLite takes them through one prepared
statement's ``executemany`` (``?`` marks). PostgreSQL (psycopg 3) takes them through
``COPY ... FROM STDIN`` (psycopg's ``cursor.copy``, text format): one command streams the whole
batch, where an ``executemany`` of INSERTs pays a round of the protocol per row; the server
parses each value by its column's type (the JSON text into ``json``). Other drivers of the
``format`` styles take ``%s`` marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError

_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def insert_values(
    connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert ``rows`` (tuples of the values of ``columns``, JSON as text) into ``table``: by
    ``COPY`` on psycopg 3, else with one executemany.

    Raises:
        ValueError: The driver takes neither ``?`` nor ``%s`` marks.
    """
    if connection.dialect.driver == "psycopg":
        copy_values(connection, table, columns, rows)
        return
    style = connection.dialect.paramstyle
    mark = _MARKS.get(style)
    if mark is None:
        raise ValueError(f"bulk inserts into {table.name}: driver parameter style {style!r}")
    marks = ", ".join([mark] * len(columns))
    statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
    connection.exec_driver_sql(statement, list(rows))


def copy_values(
    connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """``COPY table (columns) FROM STDIN`` of ``rows`` through psycopg 3's ``cursor.copy``, in
    the connection's transaction (a failed row fails the whole batch, as the INSERT does).

    Raises:
        sqlalchemy.exc.DBAPIError: The server refused the rows, or the store failed; the
            subclass SQLAlchemy gives the driver's error (``OperationalError`` for a full disk
            or a lost server), as for statements that pass through SQLAlchemy.
    """
    import psycopg

    driver = connection.connection.driver_connection
    if driver is None:
        raise ValueError(f"bulk inserts into {table.name}: the connection has no driver")
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN"
    try:
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            write_row = copy.write_row
            for row in rows:
                write_row(row)
    except psycopg.Error as exc:
        raise DBAPIError.instance(statement, None, exc, psycopg.Error) from exc
