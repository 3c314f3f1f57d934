"""Tests of the store's schema revisions and life cycle, :mod:`palaestra.store.schema`, on
SQLite and PostgreSQL; and of run starts racing on one store."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from palaestra.core.errors import EXIT_STORE_UNUSABLE, StoreError
from palaestra.core.wire import messages as m
from palaestra.store import schema
from palaestra.store.engine import make_engine
from palaestra.store.tables import metadata as METADATA
from palaestra.store.writer import StoreWriter

OLD = "0001_initial"
PROVENANCE = "0002_provenance_and_reward"
BIGINT = "0003_bigint_seeds"
STATISTICS = "0004_statistics_and_simtime"
EPISODES = "0005_episodes_and_ends"
REPLAY = "0006_replay_sources"
LIVE = "0008_live_simulators"
PATHS = "0009_unbounded_paths"
SEED_MAX = 2**63 - 1  # the largest seed a run file may give
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
REWARDS: list[tuple[dict[str, Any], float | None]] = [  # rewards -> expected reward
    ({"r": 1.5}, 1.5),
    ({"a": [1, 2], "b": 0.5}, 3.5),
    ({"a": -2, "note": "text", "flag": True}, -2.0),
    ({"note": "text", "flag": False}, None),
    ({}, None),
]
ACTIONS = 2 * 2000 + 3  # more than two of the migration's batches


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return request.getfixturevalue("pg_uri")


@pytest.fixture
def engine(store_uri: str) -> Iterator[Engine]:
    engine = make_engine(store_uri)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Any) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path}/store.db")
    yield engine
    engine.dispose()


def upgrade(engine: Engine, revision: str) -> None:
    """Run the revisions up to ``revision`` (what :func:`schema.migrate` does to old stores)."""
    with engine.begin() as connection:
        command.upgrade(schema.alembic_config(connection), revision)


def differences(engine: Engine) -> list[Any]:
    """What alembic's autogenerate finds between the store and the models."""
    with engine.connect() as connection:
        # the version table is no model: name it so that compare_metadata skips it
        context = MigrationContext.configure(
            connection, opts={"version_table": schema.VERSION_TABLE}
        )
        return compare_metadata(context, METADATA)


def changes(engine: Engine) -> list[tuple[str, str, str]]:
    """``(operation, table, column)`` of each difference between the store and the models."""
    found = []
    for difference in differences(engine):
        if isinstance(difference, list):  # changes of one column's type, nullability, ...
            found += [(change[0], change[2], change[3]) for change in difference]
        elif difference[0] == "add_table":
            found.append((difference[0], difference[1].name, ""))
        elif difference[0] == "add_index":
            found.append((difference[0], difference[1].table.name, difference[1].name))
        else:
            found.append((difference[0], difference[2], difference[3].name))
    return sorted(found)


def column_type(engine: Engine, table: str, column: str) -> str:
    (found,) = (c for c in inspect(engine).get_columns(table) if c["name"] == column)
    return str(found["type"])


def columns(engine: Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}


def scalar(engine: Engine, sql: str) -> Any:
    with engine.connect() as connection:
        return connection.execute(text(sql)).scalar()


def stamp(engine: Engine, revision: str) -> None:
    """Record ``revision`` as the store's, whatever its tables (for unknown revisions too)."""
    with engine.begin() as connection:
        connection.execute(text(f"DELETE FROM {schema.VERSION_TABLE}"))
        connection.execute(
            text(f"INSERT INTO {schema.VERSION_TABLE} (version_num) VALUES (:r)"), {"r": revision}
        )


def drop_version_table(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE {schema.VERSION_TABLE}"))


def run_start(instance_uid: str, run_uid: str = "run", seed: int = 42) -> m.StoreRunStart:
    return m.StoreRunStart(
        experiment_uid="exp",
        run_uid=run_uid,
        instance_uid=instance_uid,
        document="uid: run\n",
        file="run.yml",
        seed=seed,
        palaestra_version="0.1.0",
        host="box",
    )


# --- rows at revision 0001, written with SQL of that revision, not with the models ------------


def typed(value: Any) -> sa.types.TypeEngine[Any] | None:
    if isinstance(value, dict | list):
        return sa.JSON()
    if isinstance(value, dt.datetime):
        return sa.DateTime(timezone=True)
    return None


def insert(connection: sa.Connection, table: str, **values: Any) -> int:
    """INSERT one row into ``table``; returns its id."""
    target = sa.table(table, sa.column("id"), *(sa.column(k, typed(v)) for k, v in values.items()))
    return connection.execute(sa.insert(target).values(values).returning(target.c.id)).scalar_one()


def fill_revision_0001(engine: Engine) -> int:
    """A finished run with one phase and one agent with :data:`ACTIONS` muscle actions; returns
    the agent's id."""
    with engine.begin() as connection:
        experiment = insert(connection, "experiments", uid="exp", created_at=T0)
        run = insert(
            connection,
            "experiment_runs",
            **{"uid": "run", "experiment_id": experiment, "document": "uid: run\n"},
            **{"file": "run.yml", "seed": 42, "created_at": T0},
        )
        instance = insert(
            connection,
            "experiment_run_instances",
            **{"uid": "instance-1", "experiment_run_id": run, "status": "finished"},
            **{"reason": "", "started_at": T0, "finished_at": T0},
            **{"palaestra_version": "0.0.9", "host": "box"},
        )
        phase = insert(
            connection,
            "experiment_run_phases",
            **{"experiment_run_instance_id": instance, "index": 0, "name": "p0"},
            **{"mode": "train", "workers": 1, "episodes": 1, "config": {"episodes": 1}},
            **{"status": "finished", "started_at": T0, "finished_at": T0},
        )
        agent = insert(
            connection,
            "agents",
            **{"experiment_run_phase_id": phase, "name": "attacker", "brain": "b:B"},
            **{"muscle": "m:M", "objective": "o:O", "config": {}, "seeds": {"brain": 1}},
        )
        actions = sa.table(
            "muscle_actions",
            *(sa.column(name) for name in ("agent_id", "worker", "episode", "step", "done")),
            *(sa.column(name, sa.JSON()) for name in ("sensor_readings", "actuator_setpoints")),
            sa.column("rewards", sa.JSON()),
            sa.column("objective"),
        )
        rows = [
            {
                **{"agent_id": agent, "worker": 0, "episode": 0, "step": step, "done": False},
                **{"sensor_readings": {"s": step}, "actuator_setpoints": {"a": 1}},
                **{"rewards": REWARDS[step % len(REWARDS)][0], "objective": None},
            }
            for step in range(ACTIONS)
        ]
        connection.execute(sa.insert(actions), rows)
    return agent


def store_at_0001_with_data(engine: Engine) -> int:
    upgrade(engine, OLD)
    return fill_revision_0001(engine)


# --- the revisions -------------------------------------------------------------------------


def test_head_is_the_newest_script() -> None:
    script = ScriptDirectory.from_config(schema.alembic_config())
    assert script.get_current_head() == schema.HEAD
    assert [s.revision for s in script.walk_revisions()] == [
        schema.HEAD,
        PATHS,
        LIVE,
        "0007_resume_and_recording",
        REPLAY,
        EPISODES,
        STATISTICS,
        BIGINT,
        PROVENANCE,
        OLD,
    ]


def test_the_migrations_make_exactly_the_models_schema(engine: Engine) -> None:
    upgrade(engine, "head")

    # No difference is ignored: none shows up on SQLite or PostgreSQL.
    assert differences(engine) == []
    assert schema.current_revision(engine) == schema.HEAD


CHANGED_BY_0009 = [
    ("modify_type", "brain_states", "path"),
    ("modify_type", "experiment_runs", "file"),
    ("modify_type", "code_reloads", "path"),
]
ADDED_BY_0010 = [
    ("add_index", "evaluations", "ix_evaluations_agent"),
    ("add_table", "evaluations", ""),
]
ADDED_BY_0004 = [
    ("add_column", "world_states", "simtime"),
    ("add_index", "statistics", "ix_statistics_agent_step"),
    ("add_table", "statistics", ""),
]
ADDED_BY_0005 = [
    ("add_column", "experiment_runs", "overrides"),
    ("add_column", "muscle_actions", "terminated"),
    ("add_column", "muscle_actions", "truncated"),
    ("add_column", "world_states", "terminated"),
    ("add_column", "world_states", "truncated"),
    ("add_index", "episodes", "ix_episodes_phase_worker_episode"),
    ("add_table", "episodes", ""),
    ("add_column", "experiment_run_instances", "source_instance_id"),  # and 0006's
    ("add_column", "experiment_run_instances", "heartbeat_at"),  # and 0007's
    ("add_column", "experiment_run_instances", "resumed_from_id"),
    ("add_index", "plugin_records", "ix_plugin_records_phase_step"),
    ("add_index", "recording_gaps", "ix_recording_gaps_phase_worker"),
    ("add_table", "plugin_records", ""),
    ("add_table", "recording_gaps", ""),
    ("add_column", "muscle_actions", "stale_policy"),  # and 0008's
    ("add_column", "world_states", "late_by"),
    ("add_index", "code_reloads", "ix_code_reloads_phase"),
    ("add_table", "code_reloads", ""),
    *CHANGED_BY_0009[:2],  # and 0009's (code_reloads.path came with 0008's table)
    *ADDED_BY_0010,  # and 0010's
]


def test_revision_0001_lacks_exactly_what_0002_adds_and_0003_changes(engine: Engine) -> None:
    upgrade(engine, OLD)

    assert changes(engine) == sorted(
        [
            ("add_column", "experiment_run_instances", "code_revision"),
            ("add_column", "experiment_run_instances", "package_versions"),
            ("add_column", "muscle_actions", "reward"),
            ("modify_type", "experiment_runs", "seed"),
            *ADDED_BY_0004,
            *ADDED_BY_0005,
        ]
    )


def test_revision_0002_lacks_exactly_the_64_bit_seed_of_0003(engine: Engine) -> None:
    upgrade(engine, PROVENANCE)

    assert changes(engine) == sorted(
        [("modify_type", "experiment_runs", "seed"), *ADDED_BY_0004, *ADDED_BY_0005]
    )
    assert column_type(engine, "experiment_runs", "seed") == "INTEGER"
    upgrade(engine, schema.HEAD)
    assert column_type(engine, "experiment_runs", "seed") == "BIGINT"


def test_revision_0003_lacks_exactly_the_statistics_and_simtime_of_0004(engine: Engine) -> None:
    upgrade(engine, BIGINT)

    assert changes(engine) == sorted(ADDED_BY_0004 + ADDED_BY_0005)
    assert schema.migrate(engine) == (BIGINT, schema.HEAD)
    assert differences(engine) == []
    agent = fill_revision_0001(engine)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO statistics (agent_id, source, worker, episode, step, statistics) "
                "VALUES (:agent, 'brain', 0, 0, 3, '{\"loss\": 0.5}')"
            ),
            {"agent": agent},
        )
    schema.downgrade(engine, BIGINT)
    assert "simtime" not in columns(engine, "world_states")
    assert "statistics" not in inspect(engine).get_table_names()


def test_revision_0004_lacks_exactly_the_episodes_ends_and_overrides_of_0005(
    engine: Engine,
) -> None:
    upgrade(engine, STATISTICS)

    assert changes(engine) == sorted(ADDED_BY_0005)
    agent = fill_revision_0001(engine)
    assert schema.migrate(engine) == (STATISTICS, schema.HEAD)
    assert differences(engine) == []
    with engine.begin() as connection:
        ends = connection.execute(
            text("SELECT done, terminated, truncated FROM muscle_actions WHERE agent_id = :a"),
            {"a": agent},
        ).all()
        connection.execute(
            text(
                "INSERT INTO episodes (experiment_run_phase_id, worker, episode, started_at, "
                "steps, rewards) SELECT experiment_run_phase_id, 0, 0, :t, 3, '{}' FROM agents "
                "WHERE id = :a"
            ),
            {"a": agent, "t": T0},
        )
    assert ends and all(row == (False, None, None) for row in ends)
    schema.downgrade(engine, STATISTICS)
    assert "terminated" not in columns(engine, "world_states")
    assert "overrides" not in columns(engine, "experiment_runs")
    assert "episodes" not in inspect(engine).get_table_names()


PATH_COLUMNS = (("experiment_runs", "file"), ("brain_states", "path"), ("code_reloads", "path"))
LONG_PATH = "/" + "/".join(["d" * 100] * 40) + "/run.yml"  # 4,048 characters


def fill_paths(engine: Engine, path: str) -> None:
    """A run (from :func:`fill_revision_0001`) whose file, dump and reloaded module are at
    ``path``."""
    agent = fill_revision_0001(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE experiment_runs SET file = :p"), {"p": path})
        phase = connection.execute(
            text("SELECT experiment_run_phase_id FROM agents WHERE id = :a"), {"a": agent}
        ).scalar_one()
        insert(
            connection,
            "brain_states",
            **{"agent_id": agent, "tag": "final", "path": path, "dump": b"d", "created_at": T0},
        )
        insert(
            connection,
            "code_reloads",
            **{"experiment_run_phase_id": phase, "source": "muscle:a", "worker": 0},
            **{"episode": 0, "step": 3, "module": "m", "path": path, "ok": True, "at": T0},
        )


def paths(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return [
            connection.execute(text(f"SELECT {column} FROM {table}")).scalar_one()
            for table, column in PATH_COLUMNS
        ]


def test_revision_0008_lacks_exactly_the_unbounded_paths_of_0009(engine: Engine) -> None:
    upgrade(engine, LIVE)

    assert changes(engine) == sorted(CHANGED_BY_0009 + ADDED_BY_0010)
    assert [column_type(engine, *column) for column in PATH_COLUMNS] == ["VARCHAR(1024)"] * 3
    fill_paths(engine, "/" + "p" * 1023)
    assert schema.migrate(engine) == (LIVE, schema.HEAD)
    assert differences(engine) == []
    assert [column_type(engine, *column) for column in PATH_COLUMNS] == ["TEXT"] * 3
    assert paths(engine) == ["/" + "p" * 1023] * 3
    with engine.begin() as connection:  # the migrated store takes a path of PATH_MAX
        for table, column in PATH_COLUMNS:
            connection.execute(text(f"UPDATE {table} SET {column} = :p"), {"p": LONG_PATH})
    assert paths(engine) == [LONG_PATH] * 3
    with engine.begin() as connection:
        for table, column in PATH_COLUMNS:
            connection.execute(text(f"UPDATE {table} SET {column} = 'run.yml'"))
    schema.downgrade(engine, LIVE)
    assert [column_type(engine, *column) for column in PATH_COLUMNS] == ["VARCHAR(1024)"] * 3
    assert paths(engine) == ["run.yml"] * 3


def test_a_store_at_0008_cannot_keep_a_long_path_on_postgresql(pg_uri: str) -> None:
    """Why 0009 exists: PostgreSQL refuses a text longer than its VARCHAR, SQLite keeps it."""
    engine = make_engine(pg_uri)
    try:
        upgrade(engine, LIVE)
        with pytest.raises(sa.exc.DataError, match=r"character varying\(1024\)"):
            fill_paths(engine, LONG_PATH)
    finally:
        engine.dispose()


def test_revision_0009_lacks_exactly_the_evaluations_of_0010(engine: Engine) -> None:
    upgrade(engine, PATHS)

    assert changes(engine) == sorted(ADDED_BY_0010)
    agent = fill_revision_0001(engine)
    assert schema.migrate(engine) == (PATHS, schema.HEAD)
    assert differences(engine) == []
    with engine.begin() as connection:  # a result with a non-finite metric, and none
        for evaluation, metrics in enumerate([{"objective": "nan", "reward": 1.5}, None]):
            insert(
                connection,
                "evaluations",
                **{"agent_id": agent, "evaluation": evaluation, "training_episodes": 2},
                **{"worker": 0, "episode": 2, "at": T0},
                **({"metrics": metrics} if metrics is not None else {}),
            )
        stored = connection.execute(
            text("SELECT evaluation, metrics IS NULL FROM evaluations ORDER BY evaluation")
        ).all()
    assert [tuple(row) for row in stored] == [(0, False), (1, True)]
    schema.downgrade(engine, PATHS)
    assert "evaluations" not in inspect(engine).get_table_names()
    assert changes(engine) == sorted(ADDED_BY_0010)


# --- ensure_current on each kind of store ---------------------------------------------------


def test_ensure_current_creates_an_empty_store(engine: Engine) -> None:
    assert schema.current_revision(engine) is None
    schema.ensure_current(engine)
    assert schema.current_revision(engine) == schema.HEAD
    assert differences(engine) == []
    assert schema.create(engine) is False  # already current


def test_a_created_store_is_stamped_as_alembic_stamps_it(engine: Engine, tmp_path: Any) -> None:
    schema.ensure_current(engine)  # written without alembic: alembic must read it as HEAD
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": schema.VERSION_TABLE}
        )
        assert context.get_current_revision() == schema.HEAD
    stamped = make_engine(f"sqlite:///{tmp_path}/stamped.db")
    try:  # and its version table is the one `alembic stamp` makes
        with stamped.begin() as connection:
            command.stamp(schema.alembic_config(connection), schema.HEAD)

        def shape(store: Engine) -> tuple[Any, ...]:
            found = inspect(store)
            return (
                found.get_pk_constraint(schema.VERSION_TABLE)["constrained_columns"],
                [(c["name"], c["nullable"]) for c in found.get_columns(schema.VERSION_TABLE)],
            )

        assert shape(engine) == shape(stamped) == (["version_num"], [("version_num", False)])
    finally:
        stamped.dispose()


def test_opening_a_store_for_a_run_does_not_import_alembic(tmp_path: Any) -> None:
    code = (
        "import sys\n"
        "from palaestra.store import schema\n"
        "from palaestra.store.engine import make_engine\n"
        f"engine = make_engine('sqlite:///{tmp_path}/new.db')\n"
        "schema.ensure_current(engine)\n"
        "schema.ensure_current(engine)\n"
        "print(schema.current_revision(engine), 'alembic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == [schema.HEAD, "False"]


def test_ensure_current_keeps_a_current_store(engine: Engine) -> None:
    schema.create(engine)
    with engine.begin() as connection:
        insert(connection, "experiments", uid="kept", created_at=T0)

    schema.ensure_current(engine)

    assert scalar(engine, "SELECT uid FROM experiments") == "kept"
    assert schema.migrate(engine) == (schema.HEAD, schema.HEAD)


def test_ensure_current_refuses_an_older_store(engine: Engine) -> None:
    upgrade(engine, OLD)

    with pytest.raises(StoreError) as caught:
        schema.ensure_current(engine)

    message = str(caught.value)
    assert caught.value.exit_code == EXIT_STORE_UNUSABLE
    assert f"at schema revision {OLD}, this palaestra needs {schema.HEAD}" in message
    assert "run `palaestra database-migrate`" in message
    assert schema.current_revision(engine) == OLD
    assert "reward" not in columns(engine, "muscle_actions")


def test_ensure_current_refuses_a_store_without_a_revision(engine: Engine) -> None:
    upgrade(engine, OLD)
    drop_version_table(engine)

    with pytest.raises(StoreError, match="no recorded schema revision") as caught:
        schema.ensure_current(engine)

    assert "run `palaestra database-migrate`" in str(caught.value)
    assert caught.value.exit_code == EXIT_STORE_UNUSABLE


def test_ensure_current_refuses_a_store_of_a_newer_palaestra(engine: Engine) -> None:
    schema.create(engine)
    stamp(engine, "0099_from_the_future")

    with pytest.raises(StoreError, match="written by a newer palaestra") as caught:
        schema.ensure_current(engine)

    assert "0099_from_the_future" in str(caught.value)
    with pytest.raises(StoreError, match="newer palaestra"):
        schema.migrate(engine)
    with pytest.raises(StoreError, match="newer palaestra"):
        schema.create(engine)


def test_a_failed_migration_is_a_store_error_and_changes_nothing(engine: Engine) -> None:
    upgrade(engine, OLD)
    with engine.begin() as connection:  # in the way of 0002, which adds it after two others
        connection.execute(text("ALTER TABLE muscle_actions ADD COLUMN reward FLOAT"))

    with pytest.raises(StoreError, match="cannot migrate the schema") as caught:
        schema.migrate(engine)

    assert caught.value.exit_code == EXIT_STORE_UNUSABLE
    assert engine.url.database in str(caught.value)
    assert schema.current_revision(engine) == OLD
    assert not {"package_versions", "code_revision"} & columns(engine, "experiment_run_instances")


# --- migrate ---------------------------------------------------------------------------------


def test_migrate_from_0001_keeps_the_rows_and_fills_reward(engine: Engine) -> None:
    agent = store_at_0001_with_data(engine)

    assert schema.migrate(engine) == (OLD, schema.HEAD)

    assert schema.current_revision(engine) == schema.HEAD
    assert differences(engine) == []
    with engine.connect() as connection:
        instance = connection.execute(
            text(
                "SELECT uid, status, palaestra_version, package_versions, code_revision "
                "FROM experiment_run_instances"
            )
        ).one()
        actions = connection.execute(
            text("SELECT step, agent_id, rewards, reward FROM muscle_actions ORDER BY step")
        ).all()
    assert tuple(instance) == ("instance-1", "finished", "0.0.9", None, None)
    assert len(actions) == ACTIONS
    for step, agent_id, rewards, reward in actions:
        expected_rewards, expected_reward = REWARDS[step % len(REWARDS)]
        assert agent_id == agent
        assert _json(rewards) == expected_rewards
        assert reward == expected_reward
    # and the migrated store takes new runs: the next instance of the same run
    writer = StoreWriter("store", engine.url.render_as_string(hide_password=False))
    writer.open()
    try:
        ids = writer.handle_run_start(run_start("instance-2")).ids
    finally:
        assert writer.store is not None
        writer.store.close()
    assert ids["experiment"] == scalar(engine, "SELECT id FROM experiments")
    assert scalar(engine, "SELECT count(*) FROM experiment_run_instances") == 2


def test_migrate_from_0002_keeps_the_seeds_and_then_takes_64_bit_ones(engine: Engine) -> None:
    store_at_0001_with_data(engine)
    upgrade(engine, PROVENANCE)

    assert schema.migrate(engine) == (PROVENANCE, schema.HEAD)

    assert differences(engine) == []
    assert scalar(engine, "SELECT seed FROM experiment_runs WHERE uid = 'run'") == 42
    assert scalar(engine, "SELECT count(*) FROM muscle_actions") == ACTIONS
    writer = StoreWriter("store", engine.url.render_as_string(hide_password=False))
    writer.open()
    try:
        writer.handle_run_start(run_start("instance-2", run_uid="big", seed=SEED_MAX))
    finally:
        assert writer.store is not None
        writer.store.close()
    assert scalar(engine, "SELECT seed FROM experiment_runs WHERE uid = 'big'") == SEED_MAX


def test_a_store_at_0002_cannot_keep_a_64_bit_seed_on_postgresql(pg_uri: str) -> None:
    """Why 0003 exists: PostgreSQL's INTEGER ends at 2^31 - 1."""
    engine = make_engine(pg_uri)
    try:
        upgrade(engine, PROVENANCE)
        with pytest.raises(sa.exc.DataError, match="out of range"), engine.begin() as connection:
            experiment = insert(connection, "experiments", uid="exp", created_at=T0)
            insert(
                connection,
                "experiment_runs",
                **{"uid": "run", "experiment_id": experiment, "document": ""},
                **{"file": "run.yml", "seed": 2**31, "created_at": T0},
            )
    finally:
        engine.dispose()


def test_migrate_creates_an_empty_store(sqlite_engine: Engine) -> None:
    assert schema.migrate(sqlite_engine) == (None, schema.HEAD)
    assert differences(sqlite_engine) == []


def test_migrate_stamps_a_store_without_a_revision_then_upgrades_it(engine: Engine) -> None:
    store_at_0001_with_data(engine)
    drop_version_table(engine)

    assert schema.migrate(engine) == (OLD, schema.HEAD)

    assert schema.current_revision(engine) == schema.HEAD
    assert differences(engine) == []
    assert scalar(engine, "SELECT count(*) FROM muscle_actions WHERE reward IS NOT NULL") > 0


def test_migrate_stamps_a_store_without_a_revision_made_by_the_models(
    sqlite_engine: Engine,
) -> None:
    """Stores created before revisions were recorded, but already with the current tables:
    stamped with the oldest revision of these columns (0010: it adds a table; 0009 changes
    only types, and ran before)."""
    METADATA.create_all(sqlite_engine)

    assert schema.migrate(sqlite_engine) == (schema.HEAD, schema.HEAD)
    assert schema.current_revision(sqlite_engine) == schema.HEAD
    assert differences(sqlite_engine) == []


def test_migrate_refuses_unversioned_tables_of_no_revision(sqlite_engine: Engine) -> None:
    upgrade(sqlite_engine, OLD)
    drop_version_table(sqlite_engine)
    with sqlite_engine.begin() as connection:
        connection.execute(text("ALTER TABLE agents ADD COLUMN colour VARCHAR(8)"))

    with pytest.raises(StoreError, match="match no revision"):
        schema.migrate(sqlite_engine)

    assert schema.current_revision(sqlite_engine) is None


def test_downgrade_to_0001_and_up_again(engine: Engine) -> None:
    store_at_0001_with_data(engine)
    schema.migrate(engine)

    schema.downgrade(engine, OLD)

    assert schema.current_revision(engine) == OLD
    assert "reward" not in columns(engine, "muscle_actions")
    assert not {"package_versions", "code_revision"} & columns(engine, "experiment_run_instances")
    assert scalar(engine, "SELECT count(*) FROM muscle_actions") == ACTIONS
    assert scalar(engine, "SELECT count(*) FROM experiment_run_phases") == 1
    if engine.dialect.name == "sqlite":  # tables were rebuilt with foreign keys off
        assert scalar(engine, "PRAGMA foreign_keys") == 1
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
    schema.migrate(engine)
    assert differences(engine) == []


def test_alembic_logs_only_when_palaestra_logs_at_debug(
    sqlite_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    upgrade(sqlite_engine, OLD)
    with caplog.at_level(logging.INFO):
        schema.migrate(sqlite_engine)
    assert not [r for r in caplog.records if r.name.startswith("alembic")]

    schema.downgrade(sqlite_engine, OLD)
    with caplog.at_level(logging.DEBUG):
        schema.migrate(sqlite_engine)
    assert [r for r in caplog.records if r.name.startswith("alembic")]


# --- run starts racing on one store ------------------------------------------------------------


@pytest.fixture
def writers(pg_uri: str) -> Iterator[tuple[StoreWriter, StoreWriter]]:
    """Two writers of one PostgreSQL store (on SQLite the race cannot happen: see below)."""
    pair = (StoreWriter("store-a", pg_uri), StoreWriter("store-b", pg_uri))
    for writer in pair:
        writer.open()
    yield pair
    for writer in pair:
        assert writer.store is not None
        writer.store.close()


@pytest.mark.parametrize("created", ["experiment", "run"])
def test_run_starts_racing_for_the_same_experiment_and_run(
    writers: tuple[StoreWriter, StoreWriter], created: str, caplog: pytest.LogCaptureFixture
) -> None:
    """B looks up the experiment and run, finds (one of) them missing, and just before it
    inserts, A starts the same run and commits: B's INSERT violates the unique uid."""
    a, b = writers
    assert b.store is not None
    if created == "run":  # the experiment exists already, only the run is new
        a.handle_run_start(run_start("instance-0", run_uid="other-run"))
    a_ids: dict[str, int] = {}
    insert = b.store.insert

    def a_starts_first(table: str, **values: Any) -> int:
        if not a_ids:  # B's first INSERT: the one that collides
            a_ids.update(a.handle_run_start(run_start("instance-a")).ids)
        return insert(table, **values)

    b.store.insert = a_starts_first  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="palaestra.store.writer"):
        b_ids = b.handle_run_start(run_start("instance-b")).ids
    b.store.insert = insert  # type: ignore[method-assign]

    assert "started concurrently" in caplog.text  # B did collide, and tried again
    assert b_ids["experiment"] == a_ids["experiment"]
    assert b_ids["run"] == a_ids["run"]
    assert b_ids["instance"] != a_ids["instance"]
    engine = make_engine(a.store_uri)
    assert scalar(engine, "SELECT count(*) FROM experiments") == 1
    assert scalar(engine, "SELECT count(*) FROM experiment_runs WHERE uid = 'run'") == 1
    assert scalar(engine, "SELECT count(*) FROM experiment_run_instances") == (
        3 if created == "run" else 2
    )
    engine.dispose()


def test_on_sqlite_a_writers_transaction_holds_the_write_lock_from_its_start(
    tmp_path: Path,
) -> None:
    """So another writer's commit never comes between what a transaction read and what it
    writes (the race above cannot happen): a second writer waits for it, and then finds what
    it wrote."""
    writer = StoreWriter("store", f"sqlite:///{tmp_path}/store.db")
    writer.open()
    other = sqlite3.connect(tmp_path / "store.db", timeout=0, isolation_level=None)
    try:
        with writer._transaction("reading"):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()
        assert writer.store is not None
        writer.store.close()


def _json(value: Any) -> Any:
    """JSON columns read with plain SQL: text on SQLite, decoded on PostgreSQL."""
    import json

    return json.loads(value) if isinstance(value, str) else value


def test_the_ddl_the_writer_runs_is_that_of_the_tables() -> None:
    """The store writer creates a new store from ``ddl.json`` (it does not import SQLAlchemy),
    as ``database-create`` and ``database-migrate`` do: it must be the tables rendered."""
    from palaestra.store.driver import DDL_FILE

    assert json.loads(DDL_FILE.read_text()) == schema.rendered_ddl(), (
        "palaestra/store/ddl.json is not palaestra/store/tables.py rendered: after a change of "
        'the tables, run python -c "from palaestra.store import schema; schema.write_ddl()"'
    )


def test_a_store_the_ddl_made_is_one_create_all_makes() -> None:
    """The same tables, columns, keys and indexes as SQLAlchemy's ``create_all`` on SQLite."""
    made, created = sa.create_engine("sqlite://"), sa.create_engine("sqlite://")
    with made.begin() as connection:
        schema._create_tables(connection)
    with created.begin() as connection:
        METADATA.create_all(connection)
        schema._VERSIONS.create(connection)
    listed = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    with made.connect() as a, created.connect() as b:
        assert a.exec_driver_sql(listed).all() == b.exec_driver_sql(listed).all()


def test_the_writer_knows_the_revisions_alembic_knows() -> None:
    """It tells an older store from a newer one by its migrations' files, without alembic."""
    from palaestra.store.driver import VERSIONS

    assert {path.stem for path in VERSIONS.glob("[0-9]*.py")} == set(schema._revisions())
