"""``palaestra experiment-list``, ``experiment-show``, ``results`` and ``clean``: the runs in
the store, listed, shown, exported and deleted.

Reading goes through :mod:`palaestra.store.rows` (no pandas needed); only ``results --format
parquet`` needs pandas and pyarrow.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from palaestra.cli.common import State, instance_named, utf8_stdout, written_whole
from palaestra.cli.formatting import counted, number, printable, seconds
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
    "plugin_records": {"phase", "source", "episode", "worker"},
    "recording_gaps": set(),
    "code_reloads": {"phase", "source", "worker"},
    "evaluations": {"phase", "agent", "worker"},
}
"""The tables ``results`` exports and the filters each takes."""
EXPANDABLE = {"muscle_actions", "world_states", "statistics", "evaluations"}
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
    ("plugin_records", "plug-in record"),
    ("recording_gaps", "recording gap"),
    ("code_reloads", "code reload"),
    ("evaluations", "evaluation result"),
]
"""The tables ``clean`` counts, and what their rows are called."""
STATUS_STYLES = {
    "finished": "green",
    "running": "cyan",
    "error": "bold red",
    "failed": "bold red",
    "cancelled": "yellow",
    "stale": "magenta",
    "stopped": "yellow",
}
"""The colours of statuses on a terminal."""


# --- experiment-list -------------------------------------------------------------------------


@click.command("experiment-list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_obj
def experiment_list(state: State, fmt: str) -> None:
    """List the runs in the store, one line per instance (alias: list).

    Episodes are those done of those planned (episodes x workers of the phases started).
    """
    from palaestra.store import rows

    uri = state.config.store_uri
    found = rows.runs(store_uri=uri)
    done: Counter[str] = Counter()
    for row in rows.episodes_done(store_uri=uri):
        done[row["instance_uid"]] += row["done"]
    for row in found:
        row["episodes_done"] = done[row["instance_uid"]]
    found.columns = (*found.columns, "episodes_done")
    if fmt == "json":
        write_json(found, sys.stdout)
    elif not found:
        click.echo("No runs in the store.")
    else:
        _print(_runs_table(found), fit={"instance": 8, "status": len("cancelled"), "run": 8})


def _runs_table(found: Rows) -> Table:
    """The runs, the status last with the first line of its reason (``error: ...``, its
    control characters escaped: :func:`~palaestra.cli.formatting.printable`); the experiment
    is never wrapped, the run uid only on a narrow terminal."""
    table = _table("run")
    table.add_column("experiment", no_wrap=True)
    table.add_column("instance", no_wrap=True, overflow="ellipsis")
    for name in ("episodes", "started (UTC)", "duration"):
        table.add_column(name, no_wrap=True, justify="right")
    table.add_column("status", overflow="fold")
    for row in found:
        reason = printable((row["reason"] or "").strip().split("\n", 1)[0])
        table.add_row(
            row["run_uid"],
            row["experiment_uid"],
            row["instance_uid"],
            f"{row['episodes_done']}/{row['episodes']}",
            _time(row["started_at"])[:16],
            seconds(row["duration_s"]),
            _status(row["status"], reason),
        )
    return table


def _status(status: str, reason: str = "", *, style: str | None = None) -> Text:
    """``status`` (``status: reason``) in the colour of the status (or of the status ``style``
    names), shown only on a terminal."""
    from rich.text import Text

    text = Text()
    text.append(status, style=STATUS_STYLES.get(style or status, ""))
    if reason:
        text.append(f": {reason}")
    return text


# --- experiment-show -------------------------------------------------------------------------


@click.command("experiment-show")
@click.argument("run")
@click.option("--instance", help="An instance uid of the run (default: the newest).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.pass_obj
def experiment_show(state: State, run: str, instance: str | None, fmt: str) -> None:
    """Show a run: its phases, agents and the rewards of their episodes (and, for phases paced
    with step_rate, how late their steps began)."""
    from palaestra.report.trend import reward_trend
    from palaestra.store import rows
    from palaestra.store.completed import training_episodes

    uri = state.config.store_uri
    instances = rows.runs(run=run, store_uri=uri)
    instance = instance_named(instances, instance)
    phases = rows.phases(run, store_uri=uri, instance=instance)
    done = {
        row["phase"]: (row["done"], row["evaluations"])
        for row in rows.episodes_done(run=run, store_uri=uri)
        if row["instance_uid"] == (instance or instances[-1]["instance_uid"])
    }
    # the run's view: a resumed run's episodes of the instances it continues too, as its
    # rewards show them (episodes_done counts the instance's own)
    viewed = Counter(
        (row["phase"], row["worker"])
        for row in rows.episodes(run, store_uri=uri, instance=instance)
    )
    for row in phases:
        counts = [n for (phase, _), n in viewed.items() if phase == row["phase"]]
        training = sum(training_episodes(row["config"], n) for n in counts)
        own = done.get(row["phase"], (0, 0))
        row["episodes_done"], row["evaluations"] = max(own, (training, sum(counts) - training))
    phases.columns = (*phases.columns, "episodes_done", "evaluations")
    shown = {
        "run": _instance_row(instances, instance),
        "phases": phases,
        "agents": rows.agents(run, store_uri=uri, instance=instance),
        "rewards": rows.reward_summary(
            rows.episode_rewards(run, store_uri=uri, instance=instance)
        ),
        "trends": reward_trend(run, store_uri=uri, instance=instance),
        "code_reloads": rows.code_reloads(run, store_uri=uri, instance=instance),
        "lateness": rows.step_lateness(run, store_uri=uri, instance=instance),
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
    _echo_rich(
        f"Run {run['run_uid']} (experiment {run['experiment_uid']}), "
        f"instance {run['instance_uid']}: ",
        _status(run["status"]),
    )
    click.echo(
        f"Started {_time(run['started_at'])} UTC, duration {seconds(run['duration_s'])}; "
        f"palaestra {run['palaestra_version']}, code {run['code_revision'] or '-'}"
    )
    if run["reason"]:
        _echo_rich("Reason: ", _status(printable(run["reason"]), style=run["status"]))
    for table in (
        _phases_table(shown["phases"]),
        _agents_table(shown["agents"]),
        _rewards_table(shown["rewards"], shown["trends"]),
    ):
        click.echo()
        _print(table)
    if shown["code_reloads"]:
        click.echo()
        click.echo("Code reloads (hot reload):")
        for line in _reload_lines(shown["code_reloads"]):
            click.echo(f"  {line}")
    if shown["lateness"]:
        click.echo()
        _print(_lateness_table(shown["lateness"]))


def _reload_lines(reloads: Rows) -> list[str]:
    """A line per hot reload: when, where in the run, which plug-in and file, and whether it
    took (else the last line of its traceback, its control characters escaped)."""
    lines = []
    for row in reloads:
        where = f"phase {row['phase']} worker {row['worker']} episode {row['episode']}"
        step = "step -" if row["step"] < 0 else f"step {row['step']}"
        if row["ok"]:
            outcome = "reloaded"
        else:
            last = (row["error"] or "").strip().splitlines()[-1:] or ["?"]
            outcome = f"FAILED, old code kept: {printable(last[0])}"
        lines.append(
            f"{_time(row['at'])} {where} {step}: {row['source']} {row['path']}: {outcome}"
        )
    return lines


def _lateness_table(lateness: Rows) -> Table:
    """Per paced phase: its steps, those that began more than 1 ms late, and the lateness's
    median, 99th percentile and maximum."""
    table = _table("phase", "steps", "late > 1 ms", "p50", "p99", "max")
    table.title = "Paced steps (lateness after the due time)"
    for row in lateness:
        table.add_row(
            f"{row['phase']} {row['phase_name']}",
            str(row["steps"]),
            str(row["late"]),
            *(f"{row[name] * 1000:.2f} ms" for name in ("p50", "p99", "max")),
        )
    return table


def _phases_table(phases: Rows) -> Table:
    table = _table("phase", "name", "mode", "workers", "episodes", "status", "duration")
    table.title = "Phases"
    for row in phases:
        table.add_row(
            str(row["phase"]),
            row["name"],
            row["mode"],
            str(row["workers"]),
            f"{row['episodes_done']}/{row['episodes'] * row['workers']}"
            + (f" (+{counted(row['evaluations'], 'evaluation')})" if row["evaluations"] else ""),
            _status(row["status"]),
            seconds(row["duration_s"]),
        )
    return table


def _agents_table(agents: Rows) -> Table:
    table = _table("phase", "agent")
    table.add_column("brain", no_wrap=True)
    table.add_column("loaded from", overflow="fold")
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
    from palaestra.report.trend import for_console

    sparklines = {(row["phase"], row["agent"]): row["sparkline"] for row in trends}
    table = _table("phase", "agent", "episodes", "mean", "min", "max", "trend")
    table.title = "Episode rewards"
    for row in rewards:
        rollouts = row["evaluation"]  # (shown apart: the curve is of training episodes)
        line = "" if rollouts else sparklines.get((row["phase"], row["agent"]), "")
        table.add_row(
            f"{row['phase']} {row['phase_name']}",
            f"{row['agent']} (evaluations)" if rollouts else row["agent"],
            str(row["episodes"]),
            *(number(row[name]) for name in ("mean", "min", "max")),
            for_console(line, sys.stdout.encoding),
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
    help="Output format [default: from the suffix of -o (another than these fails), else csv].",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@click.option("--phase", multiple=True, help="Phase index or name (repeatable).")
@click.option("--agent", multiple=True, help="Agent name (repeatable).")
@click.option("--environment", multiple=True, help="Environment uid (repeatable).")
@click.option("--episode", multiple=True, type=int, help="Episode (repeatable).")
@click.option("--worker", multiple=True, type=int, help="Worker (repeatable).")
@click.option("--mode", multiple=True, help="Phase mode, e.g. train or test (repeatable).")
@click.option(
    "--source",
    multiple=True,
    help="Statistics of the brain or the muscle; plug-in records' source.",
)
@click.option(
    "--expand",
    is_flag=True,
    help="One column per sensor and set point uid (statistic key, evaluation metric).",
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
    from palaestra.report.series import unknown_filter
    from palaestra.store import rows

    fmt = fmt or _format_of(output)
    filters = _filters(table, given, expand)
    if instance is not None:  # (the start of its uid, as a terminal's list shows it: as show)
        instance = instance_named(rows.runs(run=run, store_uri=state.config.store_uri), instance)
    unknown = unknown_filter(run, filters, state.config.store_uri, instance)
    if unknown is not None:  # (a typo read as an empty table)
        raise InvalidInputError(unknown)
    if table in rows.STREAMED and not expand and fmt != "parquet":  # (memory stays flat)
        with rows.each_row(
            table, run, **filters, store_uri=state.config.store_uri, instance=instance
        ) as (columns, each):
            count = _write_file(columns, each, fmt, output)
    else:
        found = getattr(rows, table)(
            run, **filters, store_uri=state.config.store_uri, instance=instance
        )
        if expand:
            found = rows.expanded(found)
        if fmt == "parquet":
            _write_parquet(found, output)
        else:
            _write_file(found.columns, _values(found), fmt, output)
        count = len(found)
    if output is not None:
        click.echo(f"Wrote {count} rows of {table} to {output}.", err=True)


def _format_of(output: Path | None) -> str:
    """The format ``-o`` names by its suffix (none: CSV); another suffix fails (CSV written to
    ``rows.xlsx`` is a file Excel refuses to open)."""
    suffix = output.suffix.lstrip(".").lower() if output else ""
    if suffix and suffix not in FORMATS:
        raise InvalidInputError(
            f"-o {output}: results writes {', '.join('.' + f for f in FORMATS)}, not "
            f".{suffix}; name the file so, or say the format with --format"
        )
    return suffix or "csv"


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


def _values(found: Rows) -> Iterator[list[Any]]:
    """Each row's values, in the order of its columns."""
    columns = found.columns
    return ([row[name] for name in columns] for row in found)


def _write_rows(
    columns: Sequence[str], each: Iterable[Sequence[Any]], fmt: str, stream: IO[str]
) -> int:
    """Write the rows as JSON or CSV, as they come; how many."""
    if fmt == "json":
        return write_json_rows(columns, each, stream)
    return write_csv_rows(columns, each, stream)


def write_csv(found: Rows, stream: IO[str]) -> None:
    """:func:`write_csv_rows` of a query's rows."""
    write_csv_rows(found.columns, _values(found), stream)


def write_csv_rows(columns: Sequence[str], each: Iterable[Sequence[Any]], stream: IO[str]) -> int:
    """Rows as CSV with a header, written as they come; how many. JSON values as JSON text,
    timestamps ISO 8601, None empty.

    Non-finite numbers are ``inf``, ``-inf`` and ``nan``, also in JSON text (as strings).
    """
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    cell = _csv_cell
    for row in each:
        writer.writerow([cell(value) for value in row])
        count += 1
    return count


def write_json(found: Iterable[Row], stream: IO[str]) -> None:
    """Rows as a strict JSON list of objects, one per line; timestamps ISO 8601, non-finite
    numbers as the strings ``"inf"``, ``"-inf"`` and ``"nan"``."""
    lines = [_json_dumps(row) for row in found]
    stream.write("[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n")


def write_json_rows(columns: Sequence[str], each: Iterable[Sequence[Any]], stream: IO[str]) -> int:
    """:func:`write_json` of rows given as values in the order of ``columns``, written as they
    come; how many."""
    count = 0
    for row in each:
        stream.write(
            ("[\n" if not count else ",\n") + _json_dumps(dict(zip(columns, row, strict=True)))
        )
        count += 1
    stream.write("\n]\n" if count else "[]\n")
    return count


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
        with written_whole(output) as partial:
            frame.to_parquet(partial, index=False)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _write_file(
    columns: Sequence[str], each: Iterable[Sequence[Any]], fmt: str, output: Path | None
) -> int:
    """Write CSV or JSON to ``output`` (whole, or not at all), or without it to standard
    output; how many rows. Failing to write ``output`` is invalid input (a wrong path)."""
    if output is None:
        with utf8_stdout() as stream:  # (the bytes -o writes, whatever the locale's encoding)
            return _write_rows(columns, each, fmt, stream)
    try:
        with (
            written_whole(output) as partial,
            partial.open("w", encoding="utf-8", newline="") as stream,
        ):
            return _write_rows(columns, each, fmt, stream)
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

    The brain dumps go from the store and from the disk: the dump files of every instance of
    the run in this store, in the data path's brain_dumps/RUN directory and in that of the data
    path the store recorded its dumps under (another store's run of the same uid keeps its
    own). An experiment left without runs is
    deleted too. Each run goes in one transaction. A run an instance of which is still running
    is refused (exit 2; deleting it would fail it) unless --force is given.
    """
    from palaestra.store import rows
    from palaestra.store.engine import make_engine, mask_uri

    uri = state.config.store_uri
    contents = [rows.run_contents(run, store_uri=uri) for run in dict.fromkeys(runs)]
    make_engine(uri).dispose()  # a store that cannot be written fails before asking
    running = [content["still_running"] for content in contents if content["still_running"]]
    if running and not force:
        raise rows.RunStillRunningError("\n       ".join(running))
    dumps = {
        content["run"]: [
            dump_files(data_path, content["run"], content["instances"])
            for data_path in data_paths(state.config.data_path, content)
        ]
        for content in contents
    }
    click.echo(f"This deletes from the store {mask_uri(uri)}:")
    click.echo("\n".join(_cleaned_lines(contents)))
    for found in dumps.values():
        for directory, files in found:
            if files:
                click.echo(f"and from the disk: {counted(len(files), 'dump file')} in {directory}")
    if not yes:
        click.confirm("Delete?", abort=True)
    for content in contents:
        deleted = rows.delete_run(content["run"], store_uri=uri, force=force)
        count = _remove_dumps(dumps[content["run"]], content["instances"])
        removed = f" and {counted(count, 'dump file')}" if count else ""
        click.echo(f"Deleted run '{content['run']}' ({sum(deleted.values())} rows{removed}).")


def data_paths(configured: str, content: Row) -> list[str]:
    """The data paths the run's dump files lie below: the runtime config's, and those of the
    files its brain dumps were recorded at (a run started from another directory, or with
    another ``data_path``), each once."""
    from palaestra.core.description.name_rules import path_part
    from palaestra.core.texts import path_on_disk

    marker = os.sep + os.path.join("brain_dumps", path_part(content["run"])) + os.sep
    found = {os.path.abspath(configured): configured}  # (the configured one as it is given)
    for path in content["dump_paths"]:
        at = path.rfind(marker)
        if os.path.isabs(path) and at > 0:  # (a name that is no UTF-8 was stored escaped)
            data_path = path_on_disk(path[:at], exists=os.path.isdir)
            found.setdefault(data_path, data_path)
    return list(found.values())


def dump_files(data_path: str, run: str, instances: list[str]) -> tuple[str, list[str]]:
    """The directory of the brain dump files of ``run`` below ``data_path``, and the files in
    it of ``instances`` (the run's instances in the store being cleaned: another store's run of
    the same uid keeps its own; none if there is no such directory, or it is a symbolic
    link)."""
    from palaestra.core.description.name_rules import check_inside, path_part

    directory = os.path.join(data_path, "brain_dumps", path_part(run))
    if os.path.islink(directory) or not os.path.isdir(directory):
        return directory, []
    check_inside(directory, data_path)
    files = [
        os.path.join(root, name)
        for place in _instance_directories(directory, instances)
        for root, _, names in os.walk(place)
        for name in names
    ]
    return directory, sorted(files)


def _instance_directories(directory: str, instances: list[str]) -> list[str]:
    """The dump directories of ``instances`` below the run's ``directory`` that are there
    (not symbolic links)."""
    from palaestra.core.description.name_rules import path_part

    found = [os.path.join(directory, path_part(uid)) for uid in instances]
    return [place for place in found if os.path.isdir(place) and not os.path.islink(place)]


def _remove_dumps(found: list[tuple[str, list[str]]], instances: list[str]) -> int:
    """Remove the dump directories of ``instances`` below each run directory ``found`` with
    files (:func:`dump_files`), and the run's directory if that leaves it empty (another
    store's instances of the run keep theirs, and it); the number of files removed."""
    removed = 0
    for directory, files in found:
        if files:
            for place in _instance_directories(directory, instances):
                shutil.rmtree(place)
            with contextlib.suppress(OSError):  # (not empty: other instances' dumps)
                os.rmdir(directory)
            removed += len(files)
    return removed


def _cleaned_lines(contents: list[Row]) -> list[str]:
    """One line per run with its counts, one per experiment that goes with its runs."""
    lines = []
    for content in contents:
        counts = ", ".join(
            counted(content[table], name)
            for table, name in CLEANED
            if content[table] or table == "experiment_run_instances"
        )
        running = content["running"]
        note = f"; {counted(running, 'instance')} still marked running" if running else ""
        lines.append(f"  run '{content['run']}': {counts}{note}")
    cleaned = Counter(content["experiment"] for content in contents)
    for content in contents:
        experiment = content["experiment"]
        if cleaned.pop(experiment, 0) == content["runs_of_experiment"]:
            lines.append(f"  experiment '{experiment}' (no runs left)")
    return lines


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


def _fit(table: Table, narrowest: dict[str, int], width: int) -> None:
    """Narrow the columns named (to at least the width given), in that order, until ``table``
    fits ``width``; rich folds or cuts their text. What still does not fit, rich shares out.
    """
    widths = _natural_widths(table)
    excess = sum(widths) + len(widths) - 1 - width  # columns are 1 apart
    index = {str(column.header): i for i, column in enumerate(table.columns)}
    for name, smallest in narrowest.items():
        at = index[name]
        cut = min(excess, widths[at] - smallest)
        if cut > 0:
            table.columns[at].width = widths[at] - cut
            excess -= cut


def _natural_widths(table: Table) -> list[int]:
    from rich.cells import cell_len

    return [
        max([cell_len(str(column.header)), *(cell_len(str(cell)) for cell in column.cells)])
        for column in table.columns
    ]  # (a list: a table without rows has its headers' widths)


def _print(table: Table, fit: dict[str, int] | None = None) -> None:
    """Print ``table``: on a terminal fitted to its width (narrowing the columns of ``fit``
    first) and in colour; elsewhere (a pipe, a file) at full width, nothing cut or folded."""
    from rich.console import Console

    console = Console(highlight=False, markup=False)  # names as they are: def[v2], [red]p0
    if console.is_terminal:
        if fit:
            _fit(table, fit, console.width)
    else:
        natural = sum(_natural_widths(table)) + len(table.columns)
        console = Console(highlight=False, markup=False, width=max(natural, console.width))
    console.print(table)


def _echo_rich(*parts: str | Text) -> None:
    """One line of text and rich texts: coloured on a terminal, plain elsewhere."""
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    console.print(Text.assemble(*parts))


def _time(value: dt.datetime | None) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return _json_text(value)


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
