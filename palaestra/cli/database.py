"""``palaestra database-*``: creating the store and migrating it to this palaestra's schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from palaestra.cli.common import State

if TYPE_CHECKING:
    from sqlalchemy import Engine


@contextmanager
def _store(state: State) -> Iterator[Engine]:
    """The engine of the configured store, disposed afterwards."""
    from palaestra.store.engine import make_engine

    engine = make_engine(state.config.store_uri)
    try:
        yield engine
    finally:
        engine.dispose()


@click.command("database-create")
@click.pass_obj
def database_create(state: State) -> None:
    """Create the store's tables in an empty store (a current store is left as it is)."""
    from palaestra.store import schema
    from palaestra.store.engine import mask_uri

    uri = mask_uri(state.config.store_uri)
    with _store(state) as engine:
        created = schema.create(engine)
    if created:
        click.echo(f"Store ready: {uri}")
    else:
        click.echo(f"Store {uri} is already current (schema revision {schema.HEAD}).")


@click.command("database-migrate")
@click.pass_obj
def database_migrate(state: State) -> None:
    """Upgrade the store's schema to this palaestra's (an empty store is created)."""
    from palaestra.store import schema
    from palaestra.store.engine import mask_uri

    uri = mask_uri(state.config.store_uri)
    with _store(state) as engine:
        before, after = schema.migrate(engine)
    if before == after:
        click.echo(f"already at {after}")
    else:
        click.echo(f"migrated {uri} from {before or 'an empty store'} to {after}")


COMMANDS = [database_create, database_migrate]
