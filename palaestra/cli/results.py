"""``palaestra experiment-list``, ``experiment-show``, ``results`` and ``clean``: the runs in
the store, listed, shown, exported and deleted.

Reading goes through :mod:`palaestra.store.rows` (no pandas needed); only ``results --format
parquet`` needs pandas and pyarrow.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from palaestra.cli.common import State
from palaestra.core.errors import InvalidInputError
from palaestra.core.nonfinite import to_strict_json

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from palaestra.store.rows import Row, Rows

FILTERS = {
    "muscle_actions": {"phase", "agent", "episode", "worker", "mode"},
    "world_states": {"phase", "environment", "episode", "worker", "mode"},
    "brain_states": {"phase", "agent"},
    "episode_rewards": {"phase", "agent", "mode"},
    "statistics": {"phase", "agent", "source", "episode", "worker", "mode"},
}
"""The tables ``results`` exports and the filters each takes."""
EXPANDABLE = {"muscle_actions", "world_states", "statistics"}
FORMATS = ("csv", "json", "parquet")
PARQUET_MISSING = "--format parquet needs pandas and pyarrow: pip install 'palaestra[parquet]'"
CLEANED = [
    ("experiment_run_instances", "instance"),
    ("experiment_run_phases", "phase"),
    ("agents", "agent"),
    ("environments", "environment"),
    ("world_states", "world state"),
    ("muscle_actions", "muscle action"),
    ("brain_states", "brain state"),
    ("statistics", "statistics row"),
]
"""The tables ``clean`` counts, and what their rows are called."""


# --- experiment-list -------------------------------------------------------------------------


@click.command("experiment-list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_obj
def experiment_list(state: State, fmt: str) -> None:
    """List the runs in the store, one line per instance (alias: list)."""
    from palaestra.store import rows

    found = rows.runs(store_uri=state.config.store_uri)
    if fmt == "json":
        write_json(found, sys.stdout)
    elif not found:
        click.echo("No runs in the store.")
    else:
        _print(_runs_table(found))


def _runs_table(found: Rows) -> Table:
    """The runs, the status last with the first line of its reason (``error: ...``)."""
    table = _table("run", "experiment")
    for name in ("phases", "episodes", "started (UTC)", "duration"):
        table.add_column(name, no_wrap=True, justify="right")
    table.add_column("status")
    for row in found:
        reason = (row["reason"] or "").strip().split("\n", 1)[0]
        table.add_row(
            row["run_uid"],
            row["experiment_uid"],
            str(row["phases"]),
            str(row["episodes"]),
            _time(row["started_at"])[:16],
            _seconds(row["duration_s"]),
            _one_line(f"{row['status']}: {reason}" if reason else row["status"]),
        )
    _fit(table, {"status": len("cancelled"), "experiment": 10, "run": 12})
    return table


# --- experiment-show -------------------------------------------------------------------------


@click.command("experiment-show")
@click.argument("run")
@click.option("--instance", help="An instance uid of the run (default: the newest).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.pass_obj
def experiment_show(state: State, run: str, instance: str | None, fmt: str) -> None:
    """Show a run: its phases, agents and the rewards of their episodes."""
    from palaestra.report.trend import reward_trend
    from palaestra.store import rows

    uri = state.config.store_uri
    phases = rows.phases(run, store_uri=uri, instance=instance)
    shown = {
        "run": _instance_row(rows.runs(run=run, store_uri=uri), instance),
        "phases": phases,
        "agents": rows.agents(run, store_uri=uri, instance=instance),
        "rewards": rows.reward_summary(
            rows.episode_rewards(run, store_uri=uri, instance=instance)
        ),
        "trends": reward_trend(run, store_uri=uri, instance=instance),
    }
    if fmt == "json":
        sys.stdout.write(_json_dumps(shown, indent=2) + "\n")
    else:
        _show(shown)


def _instance_row(instances: Rows, instance: str | None) -> Row:
    """The row of the instance named, or of the newest."""
    if instance is None:
        return instances[-1]
    return next(row for row in instances if row["instance_uid"] == instance)


def _show(shown: dict[str, Any]) -> None:
    run = shown["run"]
    click.echo(
        f"Run {run['run_uid']} (experiment {run['experiment_uid']}), "
        f"instance {run['instance_uid']}: {run['status']}"
    )
    click.echo(
        f"Started {_time(run['started_at'])} UTC, duration {_seconds(run['duration_s'])}; "
        f"palaestra {run['palaestra_version']}, code {run['code_revision'] or '-'}"
    )
    if run["reason"]:
        click.echo(f"Reason: {run['reason']}")
    for table in (
        _phases_table(shown["phases"]),
        _agents_table(shown["agents"]),
        _rewards_table(shown["rewards"], shown["trends"]),
    ):
        click.echo()
        _print(table)


def _phases_table(phases: Rows) -> Table:
    table = _table("phase", "name", "mode", "workers", "episodes", "status", "duration")
    table.title = "Phases"
    for row in phases:
        table.add_row(
            str(row["phase"]),
            row["name"],
            row["mode"],
            str(row["workers"]),
            str(row["episodes"]),
            row["status"],
            _seconds(row["duration_s"]),
        )
    return table


def _agents_table(agents: Rows) -> Table:
    table = _table("phase", "agent", "brain", "loaded from")
    table.title = "Agents"
    for row in agents:
        table.add_row(
            f"{row['phase']} {row['phase_name']}",
            row["agent"],
            row["brain"],
            _loaded_from(row["loaded_from"]),
        )
    return table


def _loaded_from(loaded: dict[str, Any] | None) -> str:
    """Where an agent's brain dump came from: ``run agent phase N (dump ID)``, or JSON."""
    if not loaded:
        return "-"
    if not {"run", "agent", "phase"} <= loaded.keys():
        return _json_dumps(loaded, separators=(",", ":"))
    dump = f" (dump {loaded['brain_state_id']})" if "brain_state_id" in loaded else ""
    return f"{loaded['run']} {loaded['agent']} phase {loaded['phase']}{dump}"


def _rewards_table(rewards: Rows, trends: Rows) -> Table:
    sparklines = {(row["phase"], row["agent"]): row["sparkline"] for row in trends}
    table = _table("phase", "agent", "episodes", "mean", "min", "max", "trend")
    table.title = "Episode rewards"
    for row in rewards:
        table.add_row(
            f"{row['phase']} {row['phase_name']}",
            row["agent"],
            str(row["episodes"]),
            *(_number(row[name]) for name in ("mean", "min", "max")),
            sparklines.get((row["phase"], row["agent"]), ""),  # palaestra.report.trend
        )
    return table


# --- results ---------------------------------------------------------------------------------


@click.command("results")
@click.argument("run")
@click.option(
    "--table",
    type=click.Choice(list(FILTERS)),
    default="muscle_actions",
    show_default=True,
    help="What to export (brain_states: their metadata, never the dumps).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Output format [default: from the suffix of -o, else csv].",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@click.option("--phase", multiple=True, help="Phase index or name (repeatable).")
@click.option("--agent", multiple=True, help="Agent name (repeatable).")
@click.option("--environment", multiple=True, help="Environment uid (repeatable).")
@click.option("--episode", multiple=True, type=int, help="Episode (repeatable).")
@click.option("--worker", multiple=True, type=int, help="Worker (repeatable).")
@click.option("--mode", multiple=True, help="Phase mode, e.g. train or test (repeatable).")
@click.option("--source", multiple=True, help="Statistics of the brain or the muscle.")
@click.option(
    "--expand", is_flag=True, help="One column per sensor and set point uid (statistic key)."
)
@click.option("--instance", help="An instance uid of the run (default: the newest).")
@click.pass_obj
def results(
    state: State,
    /,
    run: str,
    table: str,
    fmt: str | None,
    output: Path | None,
    expand: bool,
    instance: str | None,
    **given: Any,
) -> None:
    """Export a table of a run as CSV, JSON or Parquet (to stdout without -o).

    JSON values (sensor readings, set points, rewards) are JSON text in CSV and Parquet cells.
    Infinities and NaN are "inf", "-inf" and "nan": strings in JSON, text in CSV, floats in
    Parquet number columns.
    """
    from palaestra.store import rows

    fmt = fmt or _format_of(output)
    filters = _filters(table, given, expand)
    found = getattr(rows, table)(
        run, **filters, store_uri=state.config.store_uri, instance=instance
    )
    if expand:
        found = rows.expand(found)
    if fmt == "parquet":
        _write_parquet(found, output)
    elif output is None:
        _write_text(found, fmt, sys.stdout)
    else:
        _write_file(found, fmt, output)
    if output is not None:
        click.echo(f"Wrote {len(found)} rows of {table} to {output}.", err=True)


def _format_of(output: Path | None) -> str:
    suffix = output.suffix.lstrip(".").lower() if output else ""
    return suffix if suffix in FORMATS else "csv"


def _filters(table: str, given: dict[str, tuple[Any, ...]], expand: bool) -> dict[str, Any]:
    """The query filters of the options given; those that do not apply to ``table`` fail."""
    if expand and table not in EXPANDABLE:
        raise InvalidInputError(f"--expand does not apply to --table {table}")
    filters: dict[str, Any] = {}
    for name, values in given.items():
        if not values:
            continue
        if name not in FILTERS[table]:
            raise InvalidInputError(f"--{name} does not apply to --table {table}")
        if name == "phase":
            values = tuple(int(v) if v.lstrip("-").isdigit() else v for v in values)
        filters[name] = values[0] if len(values) == 1 else list(values)
    return filters


def _write_text(found: Rows, fmt: str, stream: IO[str]) -> None:
    if fmt == "json":
        write_json(found, stream)
    else:
        write_csv(found, stream)


def write_csv(found: Rows, stream: IO[str]) -> None:
    """Rows as CSV with a header; JSON values as JSON text, timestamps ISO 8601, None empty.

    Non-finite numbers are ``inf``, ``-inf`` and ``nan``, also in JSON text (as strings).
    """
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(found.columns)
    writer.writerows([_csv_cell(row[name]) for name in found.columns] for row in found)


def write_json(found: Iterable[Row], stream: IO[str]) -> None:
    """Rows as a strict JSON list of objects, one per line; timestamps ISO 8601, non-finite
    numbers as the strings ``"inf"``, ``"-inf"`` and ``"nan"``."""
    lines = [_json_dumps(row) for row in found]
    stream.write("[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n")


def _write_parquet(found: Rows, output: Path | None) -> None:
    if output is None:
        raise InvalidInputError("--format parquet needs a file: -o FILE")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise InvalidInputError(PARQUET_MISSING) from exc
    from palaestra.store.query import to_frame

    frame = to_frame(found)
    for name in frame.columns:
        if any(isinstance(value, dict | list) for value in frame[name]):
            frame[name] = [_json_text(value) for value in frame[name]]
    try:
        frame.to_parquet(output, index=False)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _write_file(found: Rows, fmt: str, output: Path) -> None:
    """Write CSV or JSON to ``output``; failing to is invalid input (a wrong path)."""
    try:
        with output.open("w", encoding="utf-8", newline="") as stream:
            _write_text(found, fmt, stream)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {output}: {exc.strerror or exc}") from exc


# --- clean -----------------------------------------------------------------------------------


@click.command("clean")
@click.argument("runs", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@click.option(
    "--force",
    is_flag=True,
    help="Also delete runs still marked running: for runs left running by a crash.",
)
@click.pass_obj
def clean(state: State, runs: tuple[str, ...], yes: bool, force: bool) -> None:
    """Delete runs with all their instances, phases, agents, records and brain dumps.

    An experiment left without runs is deleted too. Each run goes in one transaction. A run
    whose newest instance is still running is refused (exit 2; deleting it would fail it)
    unless --force is given.
    """
    from palaestra.store import rows
    from palaestra.store.engine import make_engine, mask_uri

    uri = state.config.store_uri
    contents = [rows.run_contents(run, store_uri=uri) for run in dict.fromkeys(runs)]
    make_engine(uri).dispose()  # a store that cannot be written fails before asking
    running = [content["still_running"] for content in contents if content["still_running"]]
    if running and not force:
        raise rows.RunStillRunningError("\n       ".join(running))
    click.echo(f"This deletes from the store {mask_uri(uri)}:")
    click.echo("\n".join(_cleaned_lines(contents)))
    if not yes:
        click.confirm("Delete?", abort=True)
    for content in contents:
        deleted = rows.delete_run(content["run"], store_uri=uri, force=force)
        click.echo(f"Deleted run '{content['run']}' ({sum(deleted.values())} rows).")


def _cleaned_lines(contents: list[Row]) -> list[str]:
    """One line per run with its counts, one per experiment that goes with its runs."""
    lines = []
    for content in contents:
        counts = ", ".join(
            _counted(content[table], name)
            for table, name in CLEANED
            if content[table] or table == "experiment_run_instances"
        )
        running = content["running"]
        note = f"; {_counted(running, 'instance')} still marked running" if running else ""
        lines.append(f"  run '{content['run']}': {counts}{note}")
    cleaned = Counter(content["experiment"] for content in contents)
    for content in contents:
        experiment = content["experiment"]
        if cleaned.pop(experiment, 0) == content["runs_of_experiment"]:
            lines.append(f"  experiment '{experiment}' (no runs left)")
    return lines


def _counted(count: int, name: str) -> str:
    return f"{count} {name}" if count == 1 else f"{count} {name}s"


# --- formatting ------------------------------------------------------------------------------


def _table(*columns: str) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=0,
        show_edge=False,
        title_justify="left",
        title_style="bold",
    )
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def _one_line(text: str) -> Text:
    """``text`` cut to its column's width with an ellipsis, never wrapped."""
    from rich.text import Text

    return Text(text, no_wrap=True, overflow="ellipsis")


def _fit(table: Table, narrowest: dict[str, int]) -> None:
    """Narrow the columns named (to at least the width given), in that order, until ``table``
    fits the terminal; rich folds or cuts their text. What still does not fit, rich shares out.
    """
    from rich.cells import cell_len
    from rich.console import Console

    widths = [
        max(cell_len(str(column.header)), *(cell_len(str(cell)) for cell in column.cells))
        for column in table.columns
    ]
    excess = sum(widths) + len(widths) - 1 - Console().width  # columns are 1 apart
    index = {str(column.header): i for i, column in enumerate(table.columns)}
    for name, smallest in narrowest.items():
        at = index[name]
        cut = min(excess, widths[at] - smallest)
        if cut > 0:
            table.columns[at].width = widths[at] - cut
            excess -= cut


def _print(table: Table) -> None:
    from rich.console import Console

    Console(highlight=False).print(table)


def _time(value: dt.datetime | None) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return _json_text(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def _json_text(value: Any) -> Any:
    if isinstance(value, dict | list):
        return _json_dumps(value, separators=(",", ":"))
    return value


def _json_dumps(value: Any, **options: Any) -> str:
    """``value`` as strict JSON (see :func:`~palaestra.core.nonfinite.to_strict_json`)."""
    return json.dumps(to_strict_json(value), default=_json_default, allow_nan=False, **options)


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not exported as JSON")


COMMANDS = [experiment_list, experiment_show, results, clean]
