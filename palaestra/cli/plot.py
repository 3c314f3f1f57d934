"""``palaestra plot``: learning curves of runs drawn to an image file, without code."""

from __future__ import annotations

from pathlib import Path

import click

from palaestra.cli.common import State, written_whole
from palaestra.core.errors import InvalidInputError


@click.command("plot")
@click.argument("runs", nargs=-1, required=True)
@click.option("--phase", help="Only this phase (name or index); default: all, in order.")
@click.option("--agent", help="Only this agent; default: every agent, one line each.")
@click.option(
    "--metric",
    default="reward",
    show_default=True,
    help="'reward' (episode reward) or a statistic key recorded with add_statistics "
    "(its mean per episode).",
)
@click.option(
    "--smooth",
    "smoothing",
    default="auto",
    show_default=True,
    help="The trailing mean over this many episodes (each phase on its own; 1: none), or auto: "
    "about a fiftieth of the episodes.",
)
@click.option(
    "--x",
    "x_axis",
    type=click.Choice(["episode", "steps"]),
    default="episode",
    show_default=True,
    help="Against the episode index (workers in time order) or the cumulative environment steps.",
)
@click.option(
    "--aggregate/--no-aggregate",
    default=None,
    help="Combine the runs into a mean line and a band per agent (per group of runs that differ "
    "only by seed, in a sweep). Default: when the runs are of a sweep over seeds.",
)
@click.option(
    "--band",
    type=click.Choice(["minmax", "std"]),
    default="minmax",
    show_default=True,
    help="With --aggregate: shade min to max, or one standard deviation either side.",
)
@click.option("--title", help="The figure's title; default: the runs.")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The image file (.png, .svg or .pdf).",
)
@click.pass_obj
def plot(
    state: State,
    runs: tuple[str, ...],
    phase: str | None,
    agent: str | None,
    metric: str,
    smoothing: str,
    x_axis: str,
    aggregate: bool | None,
    band: str,
    title: str | None,
    output: str,
) -> None:
    """Draw the episode rewards (or a statistic) of RUNS, one line per run and agent.

    The workers of a phase are combined in time order. Needs matplotlib:
    pip install 'palaestra[plot]'.
    """
    from palaestra.core.description.extras import require
    from palaestra.report import plot as drawing
    from palaestra.report.bands import grouped_bands, is_seed_sweep
    from palaestra.report.series import auto_window, load_series, smoothed
    from palaestra.store.rows import run_record

    require("matplotlib", "palaestra plot")  # before reading the store: fail fast
    chosen_phase: int | str | None = int(phase) if phase and phase.isdigit() else phase
    uri = state.config.store_uri
    overrides = {run: run_record(run, store_uri=uri)["overrides"] for run in dict.fromkeys(runs)}
    series = [
        one
        for run in overrides
        for one in load_series(
            run,
            metric=metric,
            phase=chosen_phase,
            agent=agent,
            store_uri=uri,
        )
    ]
    window = auto_window(series) if smoothing == "auto" else _window(smoothing)
    caption = title or ", ".join(dict.fromkeys(runs))
    try:
        image = _image(output)
        output = str(image)
        with written_whole(image) as partial:
            if aggregate or (aggregate is None and is_seed_sweep(overrides)):
                bands = grouped_bands([smoothed(one, window) for one in series], overrides)
                drawing.draw(partial, bands=bands, x=x_axis, band=band, title=caption)
                what = f"{len(bands)} means with a {band} band, of {len(overrides)} runs"
            else:
                drawing.draw(partial, series=series, x=x_axis, window=window, title=caption)
                what = f"{len(series)} line{'s' if len(series) != 1 else ''}"
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"-o {output}: cannot write the image: {exc}") from exc
    smoothed_over = f", smoothed over {window} episodes" if window > 1 else ""
    click.echo(f"Wrote {output} ({what}{smoothed_over}).")


def _image(output: str) -> Path:
    """The image file of ``-o``: a name without a suffix is a PNG's, as matplotlib names it
    (the name says the format)."""
    image = Path(output)
    return image if image.suffix else image.with_name(image.name + ".png")


def _window(smoothing: str) -> int:
    """``--smooth``'s number of episodes.

    Raises:
        click.BadParameter: Neither ``auto`` nor a whole number of at least 1.
    """
    if not smoothing.isdigit() or int(smoothing) < 1:
        raise click.BadParameter(
            f"expected auto or a whole number of episodes >= 1, got {smoothing!r}",
            param_hint="'--smooth'",
        )
    return int(smoothing)


COMMANDS = [plot]
