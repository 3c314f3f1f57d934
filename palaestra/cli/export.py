"""``palaestra export``: runs' episode rewards and statistics into TensorBoard or MLflow, and
whole runs into a palaestrAI store."""

from __future__ import annotations

import click

from palaestra.cli.common import State


@click.group("export")
def export() -> None:
    """Export runs: rewards and statistics to TensorBoard or MLflow, or whole runs into a
    palaestrAI store."""


@export.command("tensorboard")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(file_okay=False),
    help="The log directory; each run goes to a directory of its own in it.",
)
@click.pass_obj
def tensorboard(state: State, runs: tuple[str, ...], output: str) -> None:
    """Write RUNS' rewards and statistics as TensorBoard scalars (view: tensorboard --logdir).

    Needs tensorboard: pip install 'palaestra[tensorboard]'.
    """
    from palaestra.core.description.extras import require
    from palaestra.report.tensorboard import PURPOSE, check_target, export_tensorboard
    from palaestra.store.rows import run_record

    require("tensorboard", PURPOSE)  # before reading the store: fail fast
    for run in dict.fromkeys(runs):  # every run known and new to -o before any is written
        run_record(run, store_uri=state.config.store_uri)
        check_target(run, output)
    for run in dict.fromkeys(runs):
        done = export_tensorboard(run, output, store_uri=state.config.store_uri)
        click.echo(f"Run '{run}': {done.values} values under {done.tags} tags in {done.where}")
    click.echo(f"View them: tensorboard --logdir {output}")


@export.command("mlflow")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--tracking-uri",
    required=True,
    help="MLflow's tracking URI: a server (http://...) or a store (sqlite:///mlflow.db).",
)
@click.option(
    "--experiment", help="The MLflow experiment (made if missing); default: the run's experiment."
)
@click.pass_obj
def mlflow(state: State, runs: tuple[str, ...], tracking_uri: str, experiment: str | None) -> None:
    """Log each instance of RUNS as an MLflow run: params, rewards and statistics.

    An instance exported before is skipped, one still running too (until it has ended).
    Needs mlflow-skinny: pip install 'palaestra[mlflow]'.
    """
    from palaestra.report.mlflow import export_mlflow

    for run in dict.fromkeys(runs):
        for done in export_mlflow(
            run, tracking_uri, experiment=experiment, store_uri=state.config.store_uri
        ):
            if done.running:
                click.echo(
                    f"Run '{run}' instance {done.instance}: still running, not exported "
                    "(export it once it has ended)"
                )
            elif done.existed:
                click.echo(
                    f"Run '{run}' instance {done.instance}: exported before ({done.run_id})"
                )
            else:
                click.echo(
                    f"Run '{run}' instance {done.instance}: MLflow run {done.run_id}, "
                    f"{done.metrics} metric values"
                )


@export.command("palaestrai")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="STORE_URI",
    help="The palaestrAI store, an SQLAlchemy URL: sqlite:///palaestrai.db or "
    "postgresql://user@host:5432/database (its tables are made if it has none).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Write a run the target holds already anew (its rows there are deleted first).",
)
@click.pass_obj
def palaestrai(state: State, runs: tuple[str, ...], target: str, replace: bool) -> None:
    """Write RUNS, every instance, into palaestrAI 3.5's store schema (for paldaque).

    Each run in one transaction: a run that fails leaves nothing in the target.
    """
    from palaestra.report.palaestrai_export import export_palaestrai
    from palaestra.store.engine import mask_uri

    for done in export_palaestrai(runs, target, replace=replace, store_uri=state.config.store_uri):
        click.echo(
            f"Run '{done.run}'{' replaced' if done.replaced else ''}: {done.instances} "
            f"instance(s), {done.world_states} world states, {done.muscle_actions} muscle "
            f"actions, {done.brain_states} brain states"
        )
    click.echo(f"Read them with paldaque: paldaque -s {mask_uri(target)} experiment-run")


COMMANDS = [export]
