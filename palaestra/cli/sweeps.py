"""``experiment-start --seeds/--set/--parallel``: a sweep over a grid, and its table of runs.

Every run of the grid is derived and checked before the first starts; then they execute
``--parallel`` at a time, each in its own executor process, a line printed as each ends; the
command ends with a table (uid, overrides, status, exit code) and exits with the worst exit
code: 0 if all finished, 1 if any failed, 130/143/129 if interrupted (SIGTERM: the table,
then the command's own way out, 143).

With ``backend: ray`` the runs execute on a Ray cluster instead (see
:mod:`palaestra.experiment.ray_sweep`): ``--parallel`` at a time, or as many as the cluster has
CPUs; a line as each run begins on a node, and a line of the sweep's progress after each
run's end.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import click

from palaestra.cli.common import ERROR, State
from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_INVALID_INPUT, EXIT_OK, InvalidInputError
from palaestra.core.supervision import interrupts
from palaestra.experiment.executor import RunOutcome

__all__ = ["start_sweep"]


def start_sweep(
    state: State,
    run_files: Sequence[str],
    *,
    seeds: str | None,
    sets: Sequence[str],
    parallel: int | None,
    hot_reload: bool = False,
    keep_going: bool = False,
) -> int:
    """Expand, check and execute the runs of ``run_files``; print the table; return the exit
    code. With ``keep_going`` a run file that is invalid (itself, or with an override) is
    reported and left out, listed at the end, and the exit code is at least 2."""
    from palaestra.experiment.api import prepare_runs
    from palaestra.experiment.overrides import expand_grid, parse_seeds, parse_set

    # (--seeds '' is no seed: a sweep of the file's own seed would hide an empty variable)
    grid = expand_grid(
        parse_seeds(seeds) if seeds is not None else (), [parse_set(text) for text in sets]
    )
    prepared: list[tuple[RunSpec, dict[str, Any]]] = []
    failed: list[tuple[str, str]] = []  # (run file, why): what --keep-going lists
    for path in run_files:
        try:
            prepared.extend(prepare_runs(path, grid, state.config))
        except InvalidInputError as exc:
            if not keep_going:
                raise
            click.echo(f"{ERROR} {exc.format_message()}", err=True)
            failed.append((path, exc.format_message()))
    if not prepared:  # (--keep-going, and every run file invalid)
        _list_invalid(len(run_files), failed)
        return EXIT_INVALID_INPUT
    specs = [spec for spec, _ in prepared]
    if hot_reload:
        from palaestra.core.description.specs import with_hot_reload

        specs = [with_hot_reload(spec) for spec in specs]
    points = [point for _, point in prepared]
    outcomes = _execute(state, specs, parallel, points)
    click.echo(_table(points, outcomes))
    worst = max((outcome.exit_code for outcome in outcomes), default=EXIT_OK)
    if failed:
        _list_invalid(len(run_files), failed)
        worst = max(worst, EXIT_INVALID_INPUT)
    return worst


def _execute(
    state: State, specs: Sequence[RunSpec], parallel: int | None, points: Sequence[Any]
) -> list[RunOutcome]:
    """The runs here or on Ray; their outcomes. SIGTERM, raised again once every run has
    ended, passes on after the table of the runs."""
    from palaestra.experiment import capacity
    from palaestra.experiment.executor import writable_data_path

    ended: dict[int, RunOutcome] = {}  # by index, as each run ends
    try:
        if state.config.backend == "ray":
            return _on_ray(state, specs, parallel, ended)
        capacity.ensure(list(specs))  # this machine's: a run on Ray runs on a node of the cluster
        writable_data_path(state.config.data_path)
        return _here(state, specs, parallel or 1, ended)
    except interrupts.Terminated:
        done = sorted(ended)
        if done:  # (none where it came before the sweep took the signals)
            click.echo(_table([points[index] for index in done], [ended[i] for i in done]))
        raise


def _list_invalid(files: int, failed: Sequence[tuple[str, str]]) -> None:
    """The end of --keep-going: the run files left out, and why."""
    click.echo(f"{files - len(failed)} of {files} run files swept.")
    click.echo(f"{len(failed)} invalid, left out:", err=True)
    for what, why in failed:
        click.echo(f"  {what}: {why.splitlines()[0] if why else ''}", err=True)


def _here(
    state: State, specs: Sequence[RunSpec], parallel: int, outcomes: dict[int, RunOutcome]
) -> list[RunOutcome]:
    """The runs on this machine, ``parallel`` at a time; a line as each ends, its outcome put
    in ``outcomes``."""
    from palaestra.experiment.sweep import run_all

    click.echo(f"Sweep: {len(specs)} runs, {min(parallel, len(specs))} at a time.")

    def ended(index: int, outcome: RunOutcome) -> None:
        outcomes[index] = outcome
        _echo_end(index, len(specs), outcome)

    return run_all(specs, state.config, parallel=parallel, on_end=ended)


def _on_ray(
    state: State,
    specs: Sequence[RunSpec],
    parallel: int | None,
    outcomes: dict[int, RunOutcome],
) -> list[RunOutcome]:
    """The runs on the Ray cluster of the runtime config; after each run's line, how many
    have ended (finished, failed, cancelled), are running and are waiting; each outcome put
    in ``outcomes``."""
    from palaestra.experiment import ray_cluster
    from palaestra.experiment.ray_sweep import run_all_on_ray

    with ray_cluster.session(state.config) as ray:
        nodes = len([node for node in ray.nodes() if node.get("Alive")])
        cpus = int(ray.cluster_resources().get("CPU", 0))
        at_once = min(parallel or cpus or 1, len(specs))
        where = state.config.ray_address or "a local Ray instance"
        click.echo(
            f"Sweep on Ray ({where}: {nodes} node{'s' if nodes != 1 else ''}, {cpus} CPUs): "
            f"{len(specs)} runs, up to {at_once} at a time."
        )
        running: set[int] = set()
        ended_by_status: dict[str, int] = {"finished": 0, "error": 0, "cancelled": 0}

        def started(index: int, node: str) -> None:
            running.add(index)
            click.echo(f"[{index + 1}/{len(specs)}] {specs[index].uid}: running on node {node}")

        def ended(index: int, outcome: RunOutcome, node: str) -> None:
            from palaestra.experiment.api import status_of

            outcomes[index] = outcome
            running.discard(index)
            ended_by_status[status_of(outcome.exit_code)] += 1
            _echo_end(index, len(specs), outcome, node)
            done = sum(ended_by_status.values())
            click.echo(
                f"Sweep: {done}/{len(specs)} ended ({ended_by_status['finished']} finished, "
                f"{ended_by_status['error']} failed, {ended_by_status['cancelled']} cancelled), "
                f"{len(running)} running, {len(specs) - done - len(running)} waiting."
            )

        return run_all_on_ray(
            ray, specs, state.config, parallel=parallel, on_start=started, on_end=ended
        )


def _echo_end(index: int, total: int, outcome: RunOutcome, node: str = "") -> None:
    """``[i/n] uid: status``, with the node it ran on, and the reason of a failure."""
    from palaestra.experiment.api import status_of

    status = status_of(outcome.exit_code)
    line = f"[{index + 1}/{total}] {outcome.run_uid}: {status}" + (
        f" (node {node})" if node else ""
    )
    if outcome.exit_code == EXIT_OK:
        click.echo(line)
    else:
        click.echo(f"{line}: {outcome.message}", err=True)


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
    return value if isinstance(value, str) else _inner(value)


def _inner(value: Any) -> str:
    """A value inside a list or mapping as Python shows it, but a date as written."""
    if isinstance(value, dt.date):
        return str(value)
    if isinstance(value, list):
        return f"[{', '.join(_inner(item) for item in value)}]"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{_inner(k)}: {_inner(v)}' for k, v in value.items())}}}"
    return repr(value)
