"""Inserting the rows producers send (:class:`~palaestra.core.wire.messages.Rows`), one statement
per batch: :func:`insert_rows` for every table.

Producers shape each row for the insert (the values in the order of
:data:`palaestra.core.wire.records.COLUMNS`). Those of ``world_states`` and ``muscle_actions``
carry their JSON columns as the text the store's engines write (see
:func:`palaestra.core.nonfinite.json_text`), so the writer hands them to the driver
as they arrived, in its transaction: no value passes SQLAlchemy's bind processors (about three
quarters of what the writer spent per row before). SQLite takes them through one prepared
statement's ``executemany`` (``?`` marks). PostgreSQL (psycopg 3) takes them through
``COPY ... FROM STDIN`` (psycopg's ``cursor.copy``, text format): one command streams the whole
batch, where an ``executemany`` of INSERTs pays a round of the protocol per row; the server
parses each value by its column's type (the JSON text into ``json``). Other drivers of the
``format`` styles take ``%s`` marks. The rarer rows of the other tables go through
SQLAlchemy's insert, their JSON values plain and their times POSIX seconds, made the columns'
times here.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, DateTime, Table
from sqlalchemy.exc import DBAPIError

from palaestra.core.wire.records import BULK, COLUMNS
from palaestra.store.tables import metadata as METADATA

TABLES: dict[str, Table] = {name: METADATA.tables[name] for name in COLUMNS}
"""The tables of :data:`palaestra.core.wire.records.COLUMNS`, by name."""

_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def insert_one(connection: Connection, table: Table, **values: Any) -> int:
    """Insert one row of ``values`` (by column) into ``table``; its id."""
    key = connection.execute(table.insert().values(**values)).inserted_primary_key
    assert key is not None  # (a single-row insert has one)
    return int(key[0])


def insert_rows(connection: Connection, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` of ``table`` (each the values of its :data:`COLUMNS`, as a producer
    shaped them): the per-step tables' straight to the driver (:func:`insert_values`), the
    others through SQLAlchemy, their POSIX seconds made the columns' times."""
    columns = COLUMNS[table.name]
    if table.name in BULK:
        insert_values(connection, table, columns, rows)
        return
    times = _time_columns(table.name)
    connection.execute(table.insert(), [_values(columns, row, times) for row in rows])


@functools.cache
def _time_columns(name: str) -> frozenset[int]:
    """Where in ``name``'s :data:`COLUMNS` the times are (the table's DateTime columns)."""
    table = TABLES[name]
    return frozenset(
        i
        for i, column in enumerate(COLUMNS[name])
        if isinstance(getattr(table.c[column].type, "impl", table.c[column].type), DateTime)
    )


def _values(columns: Sequence[str], row: tuple[Any, ...], times: frozenset[int]) -> dict[str, Any]:
    return {
        column: dt.datetime.fromtimestamp(value, dt.UTC) if i in times else value
        for i, (column, value) in enumerate(zip(columns, row, strict=True))
    }


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
