"""``palaestra database-*``: creating the store."""

from __future__ import annotations

import click

from palaestra.cli.main import State


@click.command("database-create")
@click.pass_obj
def database_create(state: State) -> None:
    """Create the store's tables (if missing)."""
    from palaestra.store.engine import create_schema, make_engine

    engine = make_engine(state.config.store_uri)
    create_schema(engine)
    engine.dispose()
    click.echo(f"Store ready: {state.config.store_uri}")


COMMANDS = [database_create]
