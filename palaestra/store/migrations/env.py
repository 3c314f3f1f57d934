"""Alembic's environment for the store: runs the revisions on the connection it is given.

:mod:`palaestra.store.schema` passes an open connection, already in a transaction, as
``config.attributes["connection"]``; the migrations run inside that transaction and the caller
commits. Without one, ``sqlalchemy.url`` of the config names the store (for developers running
alembic by hand). Offline (``--sql``) mode is not supported: revision 0002 migrates data.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from palaestra.store.driver import VERSION_TABLE
from palaestra.store.engine import make_engine
from palaestra.store.tables import metadata


def run_migrations(connection: Connection) -> None:
    """Run the requested alembic command's migrations on ``connection``."""
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # revisions rendered for SQLite need batch mode
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    """Run on the given connection, or on a store opened from ``sqlalchemy.url``."""
    if context.is_offline_mode():
        raise RuntimeError("palaestra's migrations cannot run offline (--sql): 0002 moves data")
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no connection given and no sqlalchemy.url configured")
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()


main()
