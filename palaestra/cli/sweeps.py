"""``experiment-start --seeds/--set/--parallel``: a sweep over a grid, and its table of runs.

Every run of the grid is derived and checked before the first starts; then they execute
``--parallel`` at a time, each in its own executor process, a line printed as each ends; the
command ends with a table (uid, overrides, status, exit code) and exits with the worst exit
code: 0 if all finished, 1 if any failed, 130/143 if interrupted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from palaestra.cli.common import State
from palaestra.core.errors import EXIT_OK
from palaestra.experiment.executor import RunOutcome

__all__ = ["start_sweep"]


def start_sweep(
    state: State,
    run_files: Sequence[str],
    *,
    seeds: str | None,
    sets: Sequence[str],
    parallel: int,
    hot_reload: bool = False,
) -> int:
    """Expand, check and execute the runs of ``run_files``; print the table; return the exit
    code."""
    from palaestra.experiment import capacity
    from palaestra.experiment.api import prepare_runs, status_of
    from palaestra.experiment.overrides import expand_grid, parse_seeds, parse_set
    from palaestra.experiment.sweep import run_all

    grid = expand_grid(parse_seeds(seeds) if seeds else (), [parse_set(text) for text in sets])
    prepared = [item for path in run_files for item in prepare_runs(path, grid, state.config)]
    specs = [spec for spec, _ in prepared]
    if hot_reload:
        from palaestra.core.specs import with_hot_reload

        specs = [with_hot_reload(spec) for spec in specs]
    capacity.ensure(specs)
    click.echo(f"Sweep: {len(specs)} runs, {min(parallel, len(specs))} at a time.")

    def ended(index: int, outcome: RunOutcome) -> None:
        status = status_of(outcome.exit_code)
        line = f"[{index + 1}/{len(specs)}] {outcome.run_uid}: {status}"
        if outcome.exit_code == EXIT_OK:
            click.echo(line)
        else:
            click.echo(f"{line}: {outcome.message}", err=True)

    outcomes = run_all(specs, state.config, parallel=parallel, on_end=ended)
    click.echo(_table([point for _, point in prepared], outcomes))
    return max((outcome.exit_code for outcome in outcomes), default=EXIT_OK)


def _table(points: Sequence[Mapping[str, Any]], outcomes: Sequence[RunOutcome]) -> str:
    """The runs as a plain-text table: uid, overrides, status, exit code."""
    from palaestra.experiment.api import status_of

    names = _short_names([path for point in points for path in point])
    rows = [("run", "overrides", "status", "exit")]
    for point, outcome in zip(points, outcomes, strict=True):
        shown = " ".join(f"{names[path]}={_value(value)}" for path, value in point.items())
        rows.append(
            (outcome.run_uid, shown or "-", status_of(outcome.exit_code), str(outcome.exit_code))
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def _short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path by its last key, or in full where two paths share their last key."""
    unique = list(dict.fromkeys(paths))
    last = {
        path: next((k for k in reversed(path.split(".")) if not k.isdigit()), path)
        for path in unique
    }
    taken = list(last.values())
    return {path: key if taken.count(key) == 1 else path for path, key in last.items()}


def _value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)
