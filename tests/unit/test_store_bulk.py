"""The bulk insert of the per-step tables writes, byte for byte, what SQLAlchemy's insert
writes: JSON text from the engine's serializer (non-finite floats included), booleans, NULLs."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import IntegrityError

from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    MUSCLE_ACTION_COLUMNS,
    WORLD_STATE_COLUMNS,
    muscle_action_values,
    world_state_values,
)
from palaestra.store import schema
from palaestra.store.bulk import TABLES, insert_values
from palaestra.store.engine import make_engine

WORLD_STATES, MUSCLE_ACTIONS = TABLES["world_states"], TABLES["muscle_actions"]


def _rows(offset: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    world = [
        {
            "environment_id": 1,
            "worker": 3,
            "episode": 0,
            "step": offset + i,
            "sensors": {"pole.state": [0.5, -1.25, float("inf"), None]},
            "setpoints": {"pole.push": i % 2},
            "rewards": {"reward": float("nan") if i == 1 else 1.0},
            "done": i == 2,
            "terminated": None if i == 0 else i == 2,
            "truncated": False,
            "simtime": None if i else {"simtime_ticks": 3, "simtime_timestamp": None},
        }
        for i in range(3)
    ]
    actions = [
        {
            "agent_id": 1,
            "worker": 3,
            "episode": 0,
            "step": offset + i,
            "sensor_readings": {"pole.state": [0.5, 1e300]},
            "actuator_setpoints": {"pole.push": 1},
            "rewards": {"reward": 1.0},
            "reward": 1.0,
            "objective": float("nan") if i == 1 else 0.5,
            "done": i == 2,
            "terminated": i == 2,
            "truncated": None,
        }
        for i in range(3)
    ]
    return world, actions


def _world(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as a producer shapes them (see ``Rows``)."""
    return [
        world_state_values(
            row["environment_id"],
            row["worker"],
            m.WorldStateRow(
                row["episode"],
                row["step"],
                row["sensors"],
                row["setpoints"],
                row["rewards"],
                row["done"],
                row["simtime"],
                row["terminated"],
                row["truncated"],
            ),
        )
        for row in rows
    ]


def _actions(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as a producer shapes them (see ``Rows``)."""
    return [
        muscle_action_values(
            row["agent_id"],
            row["worker"],
            m.MuscleActionRow(
                row["episode"],
                row["step"],
                row["sensor_readings"],
                row["actuator_setpoints"],
                row["rewards"],
                row["objective"],
                row["done"],
                row["terminated"],
                row["truncated"],
            ),
        )
        for row in rows
    ]


def test_the_columns_of_ready_rows_are_the_tables_columns() -> None:
    for table, columns in (
        (WORLD_STATES, WORLD_STATE_COLUMNS),
        (MUSCLE_ACTIONS, MUSCLE_ACTION_COLUMNS),
    ):
        assert set(columns) == {c.name for c in table.c} - {"id"}, table.name


def _engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    schema.create(engine)
    return engine


def _without_owners(connection: Connection) -> None:
    """The rows have no experiment, phase, agent or environment rows to point to."""
    connection.execute(text("PRAGMA foreign_keys=OFF"))


def test_bulk_rows_equal_sqlalchemy_rows(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    by_sqlalchemy = _rows(0)
    by_bulk = _rows(100)
    with engine.begin() as connection:
        _without_owners(connection)
        connection.execute(WORLD_STATES.insert(), by_sqlalchemy[0])
        connection.execute(MUSCLE_ACTIONS.insert(), by_sqlalchemy[1])
        insert_values(connection, WORLD_STATES, WORLD_STATE_COLUMNS, _world(by_bulk[0]))
        insert_values(connection, MUSCLE_ACTIONS, MUSCLE_ACTION_COLUMNS, _actions(by_bulk[1]))
    engine.dispose()
    with sqlite3.connect(tmp_path / "store.db") as conn:
        for table in ("world_states", "muscle_actions"):
            found = conn.execute(f"select * from {table} order by step").fetchall()
            assert len(found) == 6
            # all but the id and the step: the same stored values, types included
            plain = [tuple((type(v), v) for v in row[2:4] + row[5:]) for row in found]
            assert plain[:3] == plain[3:], table
    read = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with read.connect() as connection:
        sensors = connection.execute(WORLD_STATES.select().order_by(WORLD_STATES.c.step)).all()
    assert math.isinf(sensors[3].sensors["pole.state"][2])
    assert sensors[3].simtime == {"simtime_ticks": 3, "simtime_timestamp": None}
    assert sensors[4].simtime is None


def test_a_column_null_in_every_row_of_a_batch_is_null_as_inserted_and_a_required_one_fails(
    tmp_path: Path,
) -> None:
    """SQLite takes a batch without the columns it has no value of (``late_by``,
    ``stale_policy`` here): they are NULL all the same, and a required column missing in every
    row of a batch still fails it, storing nothing of it."""
    engine = _engine(tmp_path)
    rows = _world(_rows(0)[0])
    assert all(row[-1] is None for row in rows)  # late_by: none in a lockstep phase
    with engine.begin() as connection:
        _without_owners(connection)
        insert_values(connection, WORLD_STATES, WORLD_STATE_COLUMNS, rows)
    unowned = [(None, *row[1:]) for row in _world(_rows(10)[0])]  # environment_id: NOT NULL
    with pytest.raises(IntegrityError, match="environment_id"), engine.begin() as connection:
        _without_owners(connection)
        insert_values(connection, WORLD_STATES, WORLD_STATE_COLUMNS, unowned)
    engine.dispose()
    with sqlite3.connect(tmp_path / "store.db") as conn:
        found = conn.execute("select step, late_by, done, terminated from world_states").fetchall()
    assert found == [(0, None, 0, None), (1, None, 0, 0), (2, None, 1, 1)]


# --- PostgreSQL: COPY ------------------------------------------------------------------------


def _pg_text_rows(engine: Engine, table: str) -> list[tuple[str | None, ...]]:
    """Every column but the id and the step, as the server's text of it, ordered by step."""
    with engine.connect() as connection:
        columns = [
            name
            for (name,) in connection.exec_driver_sql(
                "select column_name from information_schema.columns "
                f"where table_name = '{table}' and column_name not in ('id', 'step') "
                "order by ordinal_position"
            )
        ]
        cast = ", ".join(f"{c}::text" for c in columns)
        return [
            tuple(row)
            for row in connection.exec_driver_sql(f"select {cast} from {table} order by step")
        ]


def test_copy_rows_equal_sqlalchemy_rows_on_postgres(pg_uri: str) -> None:
    """The psycopg store takes the per-step rows by COPY: the server then holds the same text
    (JSON, non-finite floats, booleans, NULLs) as for SQLAlchemy's INSERT."""
    engine = make_engine(pg_uri)
    assert engine.dialect.driver == "psycopg"
    schema.create(engine)
    by_sqlalchemy = _rows(0)
    by_copy = _rows(100)
    with engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL session_replication_role = replica")  # no owners
        connection.execute(WORLD_STATES.insert(), by_sqlalchemy[0])
        connection.execute(MUSCLE_ACTIONS.insert(), by_sqlalchemy[1])
        insert_values(connection, WORLD_STATES, WORLD_STATE_COLUMNS, _world(by_copy[0]))
        insert_values(connection, MUSCLE_ACTIONS, MUSCLE_ACTION_COLUMNS, _actions(by_copy[1]))
    for table in ("world_states", "muscle_actions"):
        found = _pg_text_rows(engine, table)
        assert len(found) == 6
        assert found[:3] == found[3:], table
    with engine.connect() as connection:
        sensors = connection.execute(WORLD_STATES.select().order_by(WORLD_STATES.c.step)).all()
    assert math.isinf(sensors[3].sensors["pole.state"][2])
    assert sensors[3].simtime == {"simtime_ticks": 3, "simtime_timestamp": None}
    assert sensors[4].simtime is None
    engine.dispose()


def test_a_failed_copy_stores_nothing_of_its_batch(pg_uri: str) -> None:
    """A row the server refuses fails the COPY and its transaction: whole batches only."""
    engine = make_engine(pg_uri)
    schema.create(engine)
    rows = _world(_rows(0)[0])
    rows[1] = (None, *rows[1][1:])  # environment_id is NOT NULL
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
        insert_values(connection, WORLD_STATES, WORLD_STATE_COLUMNS, rows)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("select count(*) from world_states").scalar() == 0
    engine.dispose()
