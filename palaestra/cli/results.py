"""``palaestra experiment-list`` and friends: what the store knows about runs."""

from __future__ import annotations

import click

from palaestra.cli.main import State


@click.command("experiment-list")
@click.pass_obj
def experiment_list(state: State) -> None:
    """List the runs in the store with status and duration."""
    from palaestra.store import query

    rows = query.runs(state.config.store_uri)
    if not rows:
        click.echo("No runs in the store.")
        return
    header = f"{'run':40} {'status':10} {'phases':>6} {'duration':>10}  started"
    click.echo(header)
    for row in rows:
        duration = row.get("duration_s")
        shown = f"{duration:.2f} s" if duration is not None else "-"
        click.echo(
            f"{str(row['run_uid'])[:40]:40} {row['status']:10} {row.get('phases', 0):>6} "
            f"{shown:>10}  {row['started_at']}"
            + (f"  {row['reason'].splitlines()[0]}" if row.get("reason") else "")
        )


COMMANDS = [experiment_list]
