"""What every command module of the command line shares: the state its commands get.

:mod:`palaestra.cli.main` builds the command group and registers the commands of
:mod:`palaestra.cli.database` and :mod:`palaestra.cli.results`; they import what they share
from here, never from ``main``, so the command line's modules import each other one way only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shlex
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from palaestra.experiment.runtime_config import RuntimeConfig, load_runtime_config

if TYPE_CHECKING:
    from palaestra.experiment.executor import RunOutcome

ERROR = click.style("Error:", fg="red", bold=True)
"""How an error line starts: red on a terminal (click.echo drops the colour elsewhere)."""


class State:
    """The options of the ``palaestra`` group (the runtime config file of ``-c``, or None; how
    often ``-v`` was given), given to every command (``click.pass_obj``)."""

    def __init__(self, config_path: str | None, verbosity: int) -> None:
        self.config_path = config_path
        self.verbosity = verbosity
        self._config: RuntimeConfig | None = None
        self.started_in = ""
        # where relative paths (a SQLite store's) lead: the working directory may be removed
        # while a run goes on (a temporary folder cleaned up); its store is kept there
        with contextlib.suppress(OSError):  # (removed already: they lead nowhere anyway)
            self.started_in = os.getcwd()

    @property
    def config(self) -> RuntimeConfig:
        """The runtime configuration in effect, read once; ``-v`` raises its log level."""
        if self._config is None:
            config = load_runtime_config(self.config_path)
            if self.verbosity:
                level = "INFO" if self.verbosity == 1 else "DEBUG"
                config = dataclasses.replace(config, log_level=level)
            self._config = config
        return self._config

    def override(self, **settings: Any) -> None:
        """Set runtime settings from the command line's options (``--backend``), over the
        file's and the environment's."""
        self._config = dataclasses.replace(self.config, **settings)


def once_from_stdin(run_files: tuple[str, ...]) -> tuple[str, ...]:
    """``run_files``, where ``-`` (the run file on standard input) is given once at most.

    Raises:
        click.UsageError: ``-`` is given twice (standard input holds one run file).
    """
    if run_files.count("-") > 1:
        raise click.UsageError("'-' (the run file on standard input) can be given once")
    return run_files


def say_outcome(state: State, run_uid: str, outcome: RunOutcome) -> bool:
    """Say how a run ended and, unless its store was unusable or has nothing of it, where its
    results are; whether it failed (exit code 1, 2 or 3; an interrupted run is cancelled)."""
    failed = outcome.exit_code in (1, 2, 3)
    if outcome.exit_code == 0:
        click.echo(f"Run '{run_uid}' finished (instance {outcome.instance_uid}).")
    elif failed:
        click.echo(f"{ERROR} run '{run_uid}' failed: {outcome.message}", err=True)
    elif outcome.recorded:
        click.echo(f"Run '{run_uid}' {outcome.message}; marked cancelled.", err=True)
    else:  # (while its processes started: the store has nothing of it)
        click.echo(
            f"Run '{run_uid}' {outcome.message} before it started; nothing was recorded.", err=True
        )
    if outcome.exit_code != 3 and outcome.recorded:
        click.echo(where_to_look(state, run_uid))
    return failed


def where_to_look(state: State, run_uid: str) -> str:
    """Where a run's results are and the commands that show them, as lines to print."""
    from palaestra.core.description.uri import hide_password  # not the store's: no SQLAlchemy here
    from palaestra.experiment.store_client import store_enabled

    uri = state.config.store_uri
    if not store_enabled(uri):
        return "Nothing was stored (store_uri is off)."
    prefix = "palaestra" + (f" -c {shlex.quote(state.config_path)}" if state.config_path else "")
    run = shlex.quote(run_uid)
    return "\n".join(
        [
            f"Results are in the store {hide_password(uri)}{_file_of(uri, state.started_in)}. "
            "Look at them with:",
            f"  {prefix} experiment-show {run}",
            f"  {prefix} results {run} --table episode_rewards -o rewards.csv",
            f"  {prefix} plot {run} -o curve.png",
        ]
    )


def _file_of(uri: str, cwd: str) -> str:
    """`` (the file /abs/path)`` for an SQLite store given by a path relative to ``cwd``; else
    empty.

    Parsed by hand (``sqlite[+driver]:///path[?query]``), not by SQLAlchemy, whose import
    would cost every run's end about 0.3 s.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.partition("+")[0] != "sqlite" or not rest.startswith("/"):
        return ""
    database = rest[1:].partition("?")[0]
    if database in ("", ":memory:") or database.startswith("file:") or os.path.isabs(database):
        return ""
    return f" (the file {os.path.normpath(os.path.join(cwd, database))})"


@contextlib.contextmanager
def utf8_stdout() -> Iterator[TextIO]:
    """Standard output as UTF-8 text, the encoding of the files the commands write, also where
    the locale's is another (latin-1, ASCII): rows piped to a file are those ``-o`` writes."""
    sys.stdout.flush()
    stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
    try:
        yield stream
    finally:
        stream.flush()
        stream.detach()  # (the buffer stays standard output's)


@contextlib.contextmanager
def written_whole(output: Path) -> Iterator[Path]:
    """The path to write ``output``'s contents to: a file beside it (with its suffix, which
    may name the format) that becomes ``output`` once the block ends, and is removed if it
    fails. A write that fails half-way (a full disk) leaves no truncated ``output``, and an
    older ``output`` as it was. A link is followed; where ``output`` is no regular file (a
    device such as ``/dev/stdout``, a named pipe), it is written itself."""
    try:
        found = os.stat(output)
    except OSError:  # (none yet; or it cannot be seen, and opening it will say why)
        target = output
    else:
        if not stat.S_ISREG(found.st_mode):
            yield output
            return
        target = Path(os.path.realpath(output))
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial{target.suffix}")
    try:
        yield partial
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def instance_named(instances: Sequence[Mapping[str, Any]], instance: str | None) -> str | None:
    """The uid of the instance of ``instances`` (a run's ``rows.runs``) named by its uid or by
    the start of its uid (as ``list`` cuts it on a terminal); ``instance`` itself where none
    or several start so (the store then says what is wrong)."""
    if instance is None or not instances:
        return instance
    uids = [row["instance_uid"] for row in instances]
    if instance in uids:
        return instance
    started = [uid for uid in uids if uid.startswith(instance)]
    return started[0] if len(started) == 1 else instance  # else the store says what is wrong
