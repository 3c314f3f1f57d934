"""The store's schema life cycle: creating a store, checking its revision, migrating it.

A store's schema revision is recorded by alembic in the table ``palaestra_alembic_version``;
the revisions are the hand-written scripts in ``palaestra/store/migrations/versions``. A new
store is created from the tables at once and stamped with the head revision; an older store is
only ever changed by :func:`migrate` (``palaestra database-migrate``), never behind the user's
back. Creating and migrating hold a lock on the store (SQLite: ``BEGIN IMMEDIATE``,
PostgreSQL: a transaction-level advisory lock), so concurrent runs on a new store are safe.

Every failure becomes a :class:`~palaestra.core.errors.StoreError` (exit code 3).

Alembic is imported only to migrate (or to explain a store at another revision): creating a
store and checking that it is at :data:`HEAD`, which every run does, read and write the version
table directly. That keeps alembic (about 12 MiB and 0.1 s of imports) out of the StoreWriter.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    create_engine,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.exc import SQLAlchemyError

from palaestra.core.errors import StoreError
from palaestra.store.driver import (
    DDL_FILE,
    PG_LOCK_KEY,
    ddl,
    newer,
    not_current,
)
from palaestra.store.driver import (
    HEAD as HEAD,
)
from palaestra.store.driver import (
    VERSION_TABLE as VERSION_TABLE,
)
from palaestra.store.engine import reason
from palaestra.store.tables import UTCDateTime
from palaestra.store.tables import metadata as METADATA

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
"""The alembic script directory shipped with the package."""
_VERSIONS = Table(  # the version table exactly as alembic makes it
    VERSION_TABLE,
    MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class _State:
    """What a store holds: its recorded revision and which palaestra tables exist."""

    revision: str | None
    tables: frozenset[str]

    @property
    def empty(self) -> bool:
        return self.revision is None and not self.tables


def current_revision(engine: Engine) -> str | None:
    """The schema revision recorded in the store, None if none is.

    Raises:
        StoreError: The store cannot be read.
    """
    with _guard(engine, "read the schema revision"), engine.connect() as connection:
        return _state(connection).revision


def require_readable(engine: Engine) -> None:
    """Refuse to read a store whose schema is not this palaestra's (say which command fixes it).

    Raises:
        StoreError: The store is at another revision, or cannot be read.
    """
    with _guard(engine, "read the schema revision"), engine.connect() as connection:
        state = _state(connection)
    if not state.empty:
        _check_current(state, _name(engine))


def create(engine: Engine) -> bool:
    """Create the schema of an empty store from the tables and stamp it with :data:`HEAD`.

    Returns:
        True if the schema was created, False if the store already was at :data:`HEAD`.

    Raises:
        StoreError: The store holds palaestra tables at another (or no) revision, or the
            schema cannot be created (e.g. the store is read-only).
    """
    with _guard(engine, "create the schema"), _locked(engine) as connection:
        state = _state(connection)
        if state.empty:
            _create_tables(connection)
            return True
        _check_current(state, _name(engine))
        return False


def ensure_current(engine: Engine) -> None:
    """Make sure the store can be written by this palaestra: create an empty one, accept one
    at :data:`HEAD`, refuse anything else (the StoreWriter calls this when it opens).

    Raises:
        StoreError: The store is at an older revision, has no recorded revision, was written
            by a newer palaestra, or cannot be read or created.
    """
    with _guard(engine, "read the schema revision"), engine.connect() as connection:
        state = _state(connection)
    if state.revision != HEAD:
        create(engine)  # rechecks under the lock: another process may be creating it


def migrate(engine: Engine) -> tuple[str | None, str]:
    """Upgrade the store to :data:`HEAD`; an empty store is created.

    A store with palaestra tables but no recorded revision (made before revisions were
    recorded) is first stamped with the oldest revision whose tables and columns it has.

    Returns:
        The revision before (None for an empty store) and after.

    Raises:
        StoreError: The store was written by a newer palaestra, its tables match no
            revision, or a migration failed (nothing is changed then).
    """
    with _guard(engine, "migrate the schema"), _locked(engine, rebuild=True) as connection:
        state = _state(connection)
        if state.empty:
            _create_tables(connection)
            return None, HEAD
        start = state.revision or _stamp_unversioned(connection, _name(engine))
        if start not in _revisions():
            raise newer(start, _name(engine))
        if start != HEAD:
            LOG.info("migrating %s from %s to %s", _name(engine), start, HEAD)
            _alembic(connection, "upgrade", HEAD)
        return start, HEAD


def downgrade(engine: Engine, revision: str) -> None:
    """Downgrade the store to ``revision`` (for developers and tests; data may be lost).

    Raises:
        StoreError: A migration failed (nothing is changed then).
    """
    with _guard(engine, "downgrade the schema"), _locked(engine, rebuild=True) as connection:
        _alembic(connection, "downgrade", revision)


def alembic_config(connection: Connection | None = None) -> Config:
    """An alembic config (no ``alembic.ini``) of the packaged migrations, run on
    ``connection`` (see ``migrations/env.py``)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


# --- the store's state ------------------------------------------------------------------------


def _create_tables(connection: Connection) -> None:
    """Create every table at once (faster than running each revision), with the DDL the store
    writer runs too (:func:`palaestra.store.driver.ddl`)."""
    for statement in ddl()[connection.dialect.name]:
        connection.exec_driver_sql(statement)
    connection.execute(insert(_VERSIONS).values(version_num=HEAD))  # what `alembic stamp` does


def rendered_ddl() -> dict[str, Any]:
    """What ``ddl.json`` holds, rendered from the tables (:func:`write_ddl` writes it): per
    dialect the statements that create them and the version table, as ``create_all`` orders
    them; per table its JSON columns (True: None is SQL NULL) and its time columns."""
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlalchemy.schema import CreateIndex, CreateTable

    out: dict[str, Any] = {}
    dialects = (("sqlite", sqlite.dialect()), ("postgresql", postgresql.dialect()))  # type: ignore[no-untyped-call]
    for name, dialect in dialects:
        statements = []
        for table in [*METADATA.sorted_tables, _VERSIONS]:
            statements.append(str(CreateTable(table).compile(dialect=dialect)).strip())
            for index in sorted(table.indexes, key=lambda index: str(index.name)):
                statements.append(str(CreateIndex(index).compile(dialect=dialect)).strip())
        out[name] = statements
    out["json"] = {
        table.name: {
            c.name: bool(c.type.none_as_null) for c in table.c if isinstance(c.type, JSON)
        }
        for table in METADATA.sorted_tables
    }
    out["times"] = {
        table.name: [c.name for c in table.c if isinstance(c.type, UTCDateTime)]
        for table in METADATA.sorted_tables
    }
    return out


def write_ddl() -> None:
    """Write :func:`rendered_ddl` to ``ddl.json`` (after a change of the tables)."""
    DDL_FILE.write_text(json.dumps(rendered_ddl(), indent=1) + "\n", encoding="utf-8")


def _state(connection: Connection) -> _State:
    names = set(inspect(connection).get_table_names())
    tables = names & set(METADATA.tables)
    revision = _read_revision(connection) if VERSION_TABLE in names else None
    return _State(revision, frozenset(tables))


def _read_revision(connection: Connection) -> str | None:
    """The recorded revision (alembic keeps one row per head; palaestra has one head)."""
    revisions = connection.execute(select(_VERSIONS.c.version_num)).scalars().all()
    if len(revisions) > 1:
        raise StoreError(f"the store records several schema revisions: {sorted(revisions)}")
    return revisions[0] if revisions else None


def _check_current(state: _State, store: str) -> None:
    """Raise the StoreError that says why a non-empty store is not at :data:`HEAD`."""
    if state.revision != HEAD:
        raise not_current(state.revision, store)


def _stamp_unversioned(connection: Connection, store: str) -> str:
    """Stamp a store without a recorded revision with the oldest one its tables match.

    Only table and column names are compared, so revisions that change a column's type look
    alike: the oldest of them is stamped and the later ones run (they are harmless on columns
    that already have the new type).
    """
    found = _shape(connection, frozenset(METADATA.tables))
    for revision in reversed(_revisions()):
        if _shape_at(revision) == found:
            LOG.info("store %s has no recorded revision; its tables are %s", store, revision)
            _alembic(connection, "stamp", revision)
            return revision
    raise StoreError(
        f"store {store} has palaestra tables but no recorded schema revision, and its tables "
        f"match no revision of this palaestra: migrate it by hand or start a new store"
    )


def _shape(connection: Connection, tables: frozenset[str]) -> dict[str, frozenset[str]]:
    """The column names of each of ``tables`` that exists."""
    inspector = inspect(connection)
    return {
        table: frozenset(column["name"] for column in inspector.get_columns(table))
        for table in inspector.get_table_names()
        if table in tables
    }


@functools.cache
def _shape_at(revision: str) -> dict[str, frozenset[str]]:
    """The tables and columns of a store at ``revision`` (migrated in memory to find out)."""
    engine = create_engine("sqlite://")
    try:
        with engine.begin() as connection:
            _alembic(connection, "upgrade", revision)
            return _shape(connection, frozenset(METADATA.tables))
    finally:
        engine.dispose()


@functools.cache
def _revisions() -> tuple[str, ...]:
    """Every known revision, newest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return tuple(entry.revision for entry in script.walk_revisions())


# --- running alembic ------------------------------------------------------------------------


def _alembic(connection: Connection, action: str, revision: str) -> None:
    """Run the alembic command ``action`` (upgrade, downgrade, stamp) to ``revision``."""
    from alembic import command

    getattr(command, action)(alembic_config(connection), revision)


@contextlib.contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic logs every step at INFO: keep it to warnings unless palaestra logs at DEBUG."""
    logger = logging.getLogger("alembic")
    previous = logger.level
    if not logging.getLogger("palaestra").isEnabledFor(logging.DEBUG):
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextlib.contextmanager
def _locked(engine: Engine, rebuild: bool = False) -> Iterator[Connection]:
    """A connection in a transaction holding the store's schema lock; committed on success.
    ``rebuild`` (SQLite only): tables may be rebuilt (batch migrations), so foreign keys are off
    during the transaction and checked before it commits."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if rebuild and sqlite:
            _set_foreign_keys(connection, on=False)  # a no-op inside a transaction
        try:
            with connection.begin():
                _lock(connection)
                yield connection
                if rebuild and sqlite:
                    _check_foreign_keys(connection, _name(engine))
        finally:
            if rebuild and sqlite:
                _set_foreign_keys(connection, on=True)


def _lock(connection: Connection) -> None:
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})


def _set_foreign_keys(connection: Connection, on: bool) -> None:
    connection.exec_driver_sql(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    connection.commit()


def _check_foreign_keys(connection: Connection, store: str) -> None:
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").first()
    if broken is not None:
        raise StoreError(f"store {store}: the migration would break a foreign key of {broken[0]}")


@contextlib.contextmanager
def _guard(engine: Engine, doing: str) -> Iterator[None]:
    """Keep alembic quiet, and turn database and alembic errors into a StoreError naming the
    store."""
    try:
        with _quiet_alembic():
            yield
    except (SQLAlchemyError, _alembic_error()) as exc:
        raise StoreError(f"store {_name(engine)}: cannot {doing}: {reason(exc)}") from exc


def _alembic_error() -> type[Exception]:
    """Alembic's CommandError if alembic was imported (else nothing alembic could raise)."""
    util = sys.modules.get("alembic.util")
    error: type[Exception] = getattr(util, "CommandError", SQLAlchemyError)
    return error


def _name(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)
