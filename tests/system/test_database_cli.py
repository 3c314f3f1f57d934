"""``palaestra database-create`` and ``database-migrate``, and runs on a store of an older schema
revision: refused until the store is migrated, then recorded, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from click.testing import Result
from sqlalchemy import Engine, text

from palaestra.cli.main import cli
from palaestra.store import schema
from palaestra.store.engine import make_engine
from tests.conftest import EXPERIMENTS, Workspace, cli_runner

pytestmark = pytest.mark.timeout(60)

OLD = "0001_initial"
DUMMY_RUN = str(EXPERIMENTS / "dummy_run.yml")
CLEAN_ENV: dict[str, str | None] = {"PALAESTRA_STORE_URI": None, "PALAESTRA_DATA_PATH": None}
MIGRATE = "run `palaestra database-migrate`"


def invoke(*args: str, store_uri: str | None = None) -> Result:
    """Run the CLI in this process, with the store from the environment if given."""
    runner = cli_runner({**CLEAN_ENV, "PALAESTRA_STORE_URI": store_uri})
    return runner.invoke(cli, list(args), prog_name="palaestra")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return request.getfixturevalue("pg_uri")


@pytest.fixture
def sqlite_uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/store.db"


@pytest.fixture
def engine_of() -> Iterator[Any]:
    """Open stores by URI; all are disposed afterwards."""
    engines: list[Engine] = []

    def open_store(uri: str) -> Engine:
        engines.append(make_engine(uri))
        return engines[-1]

    yield open_store
    for engine in engines:
        engine.dispose()


def store_at(engine: Engine, revision: str) -> None:
    """Make the (empty) store a store of ``revision``, as an older palaestra left it."""
    with engine.begin() as connection:
        command.upgrade(schema.alembic_config(connection), revision)


def scalar(engine: Engine, sql: str) -> Any:
    with engine.connect() as connection:
        return connection.execute(text(sql)).scalar()


def runtime_config(ws: Workspace, store_uri: str) -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: {store_uri}\n")
    return str(path)


# --- the check: an old store is refused, migrated, then used ---------------------------


def test_a_run_on_an_old_store_is_refused_until_it_is_migrated(
    workspace: Workspace, store_uri: str, engine_of: Any
) -> None:
    engine = engine_of(store_uri)
    store_at(engine, OLD)
    config = runtime_config(workspace, store_uri)

    refused = workspace.run("-c", config, "experiment-start", DUMMY_RUN)

    assert refused.returncode == 3, refused.stderr[-2000:]
    assert MIGRATE in refused.stderr
    assert f"at schema revision {OLD}, this palaestra needs {schema.HEAD}" in refused.stderr
    assert scalar(engine, "SELECT count(*) FROM experiments") == 0
    assert scalar(engine, "SELECT count(*) FROM experiment_run_instances") == 0

    migrated = invoke("-c", config, "database-migrate")

    assert migrated.exit_code == 0, migrated.output
    assert migrated.output == f"migrated {store_uri} from {OLD} to {schema.HEAD}\n"

    ran = workspace.run("-c", config, "experiment-start", DUMMY_RUN)

    assert ran.returncode == 0, ran.stderr[-2000:]
    assert scalar(engine, "SELECT status FROM experiment_run_instances") == "finished"
    assert scalar(engine, "SELECT count(*) FROM muscle_actions WHERE reward IS NULL") == 0
    assert scalar(engine, "SELECT count(*) FROM muscle_actions") == 40


# --- database-create ---------------------------------------------------------------------------


def test_database_create_creates_then_finds_the_store_current(
    sqlite_uri: str, engine_of: Any
) -> None:
    created = invoke("database-create", store_uri=sqlite_uri)
    again = invoke("database-create", store_uri=sqlite_uri)

    assert created.exit_code == 0, created.output
    assert created.output == f"Store ready: {sqlite_uri}\n"
    assert again.exit_code == 0, again.output
    current = f"Store {sqlite_uri} is already current (schema revision {schema.HEAD}).\n"
    assert again.output == current
    assert schema.current_revision(engine_of(sqlite_uri)) == schema.HEAD


def test_database_create_on_an_old_store_exits_3(sqlite_uri: str, engine_of: Any) -> None:
    store_at(engine_of(sqlite_uri), OLD)

    result = invoke("database-create", store_uri=sqlite_uri)

    assert result.exit_code == 3
    assert result.stderr.startswith(f"Error: store {sqlite_uri} is at schema revision {OLD}")
    assert MIGRATE in result.stderr
    assert "Traceback" not in result.output


# --- database-migrate --------------------------------------------------------------------------


def test_database_migrate_with_the_store_from_the_environment(
    sqlite_uri: str, engine_of: Any
) -> None:
    store_at(engine_of(sqlite_uri), OLD)

    migrated = invoke("database-migrate", store_uri=sqlite_uri)
    again = invoke("database-migrate", store_uri=sqlite_uri)

    assert migrated.output == f"migrated {sqlite_uri} from {OLD} to {schema.HEAD}\n"
    assert again.exit_code == 0
    assert again.output == f"already at {schema.HEAD}\n"


def test_database_migrate_creates_an_empty_store(sqlite_uri: str, engine_of: Any) -> None:
    result = invoke("database-migrate", store_uri=sqlite_uri)

    assert result.exit_code == 0, result.output
    assert result.output == f"migrated {sqlite_uri} from an empty store to {schema.HEAD}\n"
    assert schema.current_revision(engine_of(sqlite_uri)) == schema.HEAD


def test_database_migrate_refuses_a_store_of_a_newer_palaestra(
    sqlite_uri: str, engine_of: Any
) -> None:
    engine = engine_of(sqlite_uri)
    schema.create(engine)
    with engine.begin() as connection:
        connection.execute(text(f"UPDATE {schema.VERSION_TABLE} SET version_num = '0099_x'"))

    result = invoke("database-migrate", store_uri=sqlite_uri)

    assert result.exit_code == 3
    assert "0099_x" in result.stderr and "written by a newer palaestra" in result.stderr
