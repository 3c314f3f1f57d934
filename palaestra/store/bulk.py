"""Bulk inserts of the per-step tables: one prepared statement, rows as ready tuples.

Producers send ``world_states`` and ``muscle_actions`` rows shaped for the insert
(:class:`~palaestra.core.messages.StoreRows`: the values in the order of
:data:`palaestra.core.records.STORE_COLUMNS`, JSON columns as the text the store's engines
write, see :func:`palaestra.core.nonfinite.json_text`), so the writer hands them to the
driver's ``executemany`` as they arrived, in its transaction: no value passes SQLAlchemy's
bind processors (about three quarters of what the writer spent per row before). SQLite takes
``?`` marks; drivers of the ``format`` styles (psycopg) take ``%s``, with the JSON text cast
by the server to the column's type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table

_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def insert_values(
    connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert ``rows`` (tuples of the values of ``columns``, JSON as text) into ``table`` with
    one executemany.

    Raises:
        ValueError: The driver takes neither ``?`` nor ``%s`` marks.
    """
    style = connection.dialect.paramstyle
    mark = _MARKS.get(style)
    if mark is None:
        raise ValueError(f"bulk inserts into {table.name}: driver parameter style {style!r}")
    marks = ", ".join([mark] * len(columns))
    statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
    connection.exec_driver_sql(statement, list(rows))
