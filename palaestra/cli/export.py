"""``palaestra export``: a run's episode rewards and statistics into TensorBoard or MLflow."""

from __future__ import annotations

import click

from palaestra.cli.common import State


@click.group("export")
def export() -> None:
    """Export runs' episode rewards and statistics to TensorBoard or MLflow."""


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
    from palaestra.core.extras import require
    from palaestra.report.tensorboard import PURPOSE, export_tensorboard

    require("tensorboard", PURPOSE)
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

    Needs mlflow-skinny: pip install 'palaestra[mlflow]'.
    """
    from palaestra.core.extras import require
    from palaestra.report.mlflow import PURPOSE, export_mlflow

    require("mlflow", PURPOSE)
    for run in dict.fromkeys(runs):
        for done in export_mlflow(
            run, tracking_uri, experiment=experiment, store_uri=state.config.store_uri
        ):
            if done.existed:
                click.echo(
                    f"Run '{run}' instance {done.instance}: exported before ({done.run_id})"
                )
            else:
                click.echo(
                    f"Run '{run}' instance {done.instance}: MLflow run {done.run_id}, "
                    f"{done.metrics} metric values"
                )


COMMANDS = [export]
