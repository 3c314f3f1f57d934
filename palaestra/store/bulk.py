"""Bulk inserts of the per-step tables on SQLite: one prepared statement, rows as tuples.

SQLAlchemy's ``insert()`` with a list of rows is an executemany too, but it processes every
value of every row through its bind processors in Python: about three quarters of what the
store writer spent per ``world_states`` or ``muscle_actions`` row. Here each JSON value is
encoded with the engine's own serializer (:func:`palaestra.store.engine.json_encode`, so the
text is what SQLAlchemy would write and reads back the same), and the tuples go to the
driver's ``executemany`` in the writer's transaction. Other stores (PostgreSQL) keep
SQLAlchemy's path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import JSON, Connection, Table

from palaestra.store.engine import json_encode

Row = dict[str, Any]


def _converter(table: Table, key: str) -> Callable[[Any], Any] | None:
    """How a value of column ``key`` is bound: JSON columns as text (None as SQL NULL where
    the column says so, else as ``null``), the others as they are."""
    kind = table.c[key].type
    if not isinstance(kind, JSON):
        return None
    if kind.none_as_null:
        return lambda value: None if value is None else json_encode(value)
    return json_encode


def insert_rows(connection: Connection, table: Table, rows: Sequence[Row]) -> None:
    """Insert ``rows`` (dicts with the same keys, column names of ``table``) into ``table``
    with one executemany of plain tuples."""
    keys = list(rows[0])
    converters = [_converter(table, key) for key in keys]
    columns = ", ".join(keys)
    marks = ", ".join("?" * len(keys))
    statement = f"INSERT INTO {table.name} ({columns}) VALUES ({marks})"
    pairs = list(zip(keys, converters, strict=True))
    values = [
        tuple(row[key] if convert is None else convert(row[key]) for key, convert in pairs)
        for row in rows
    ]
    connection.exec_driver_sql(statement, values)
