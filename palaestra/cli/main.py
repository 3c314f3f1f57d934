"""The ``palaestra`` command line: thin commands over the library.

Exit codes: 0 success, 1 run failed, 2 invalid input, 3 store unusable, 130/143/129
interrupted by SIGINT/SIGTERM/SIGHUP.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import re
import sys
from typing import TYPE_CHECKING, Any

import click

from palaestra.cli.common import ERROR, State, once_from_stdin, say_outcome
from palaestra.core.description.import_path import add_plugin_dirs
from palaestra.core.description.uri import hide_password
from palaestra.core.errors import (
    EXIT_INVALID_INPUT,
    EXIT_SIGINT,
    InvalidInputError,
    PalaestraError,
)
from palaestra.experiment.runtime_config import RuntimeConfig
from palaestra.version import __version__

if TYPE_CHECKING:
    from palaestra.cli import (  # noqa: F401 - ELSEWHERE's, in the import graph the contracts check
        database,
        export,
        plot,
        record,
        replay,
        results,
        resume,
    )
    from palaestra.core.supervision.prestart import Prestarted

COMPLETION = """\b
Shell completion (bash; zsh and fish alike), e.g. in ~/.bashrc:
  eval "$(_PALAESTRA_COMPLETE=bash_source palaestra)"
"""

EXIT_CODES = """\b
Exit codes:
  0    success
  1    a run failed (the message names the process and the error), or the output could not
       be written (its file is full)
  2    invalid input (run file, runtime config, arguments)
  3    the store is unusable, or the Ray cluster cannot be reached
  130  interrupted by SIGINT (Ctrl-C), 143 by SIGTERM, 129 by SIGHUP (the terminal closed)
"""

ALIAS_NOTE = re.compile(r" \(alias: [^)]*\)")
"""``(alias: start)`` in a command's help: the command list names aliases beside commands."""
ALIASES = {
    "start": "experiment-start",
    "check": "experiment-check-syntax",
    "list": "experiment-list",
}


ELSEWHERE = {
    "database-create": "database",
    "database-migrate": "database",
    "experiment-list": "results",
    "experiment-show": "results",
    "results": "results",
    "clean": "results",
    "plot": "plot",
    "export": "export",
    "experiment-replay": "replay",
    "experiment-record": "record",
    "experiment-resume": "resume",
}
"""The commands of the other modules of :mod:`palaestra.cli` (their ``COMMANDS``), by module:
each module is imported when one of its commands is called or the commands are listed, so that
a command imports only what it uses (``experiment-start`` none of them: about 0.05 s)."""


class AliasedGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *ELSEWHERE})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        name = ALIASES.get(cmd_name, cmd_name)
        if name in ELSEWHERE and name not in self.commands:
            module = importlib.import_module(f"palaestra.cli.{ELSEWHERE[name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else name), cmd, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with its aliases and the whole first sentence of its help."""
        aliases: dict[str, list[str]] = {}
        for alias, name in ALIASES.items():
            aliases.setdefault(name, []).append(alias)
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            shown = f"{name} ({', '.join(aliases[name])})" if name in aliases else name
            text = ALIAS_NOTE.sub("", command.get_short_help_str(limit=10_000))
            rows.append((shown, text))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PalaestraError as exc:
            click.echo(f"{ERROR} {exc.format_message()}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles its own): no traceback
            click.echo("Interrupted.", err=True)
            ctx.exit(EXIT_SIGINT)


@click.group(
    cls=AliasedGroup,
    epilog=EXIT_CODES + "\n" + COMPLETION,
    context_settings={"max_content_width": 120},
)
@click.version_option(__version__, prog_name="palaestra")
@click.option(
    "-c", "--config", "config_path", type=click.Path(dir_okay=False), help="Runtime config file."
)
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, verbose: int) -> None:
    """palaestra: run and analyse experiments with autonomous agents."""
    ctx.obj = State(config_path, verbose)


@cli.command("experiment-start", epilog=EXIT_CODES)
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary while it runs.")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--seeds",
    metavar="SEEDS",
    help="Sweep: one run per seed, e.g. '1..5' or '1,2,7' (sets the run's seed).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="PATH=V1[,V2...]",
    help="Sweep: set a dotted path of the run file to each value (YAML); repeat to multiply.",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Sweep: how many runs execute at once, each in its own process (default 1; with "
    "--backend ray: as many as the cluster has CPUs).",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default=None,
    help="Where the runs execute: on this machine, or on a Ray cluster (the runtime config's "
    "backend and ray_address; needs palaestra[ray] and a PostgreSQL store). Overrides the "
    "runtime config's backend.",
)
@click.option(
    "--reload",
    "hot_reload",
    is_flag=True,
    help="Hot reload: when an agent's plug-in source file changes, its processes load the new "
    "code and go on (as hot_reload: true on every agent).",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Several run files (a generated design, say): an invalid one is reported and left "
    "out instead of stopping all, and the end lists every run that failed and why.",
)
@click.pass_obj
def experiment_start(
    state: State,
    run_files: tuple[str, ...],
    quiet: bool,
    seeds: str | None,
    sets: tuple[str, ...],
    parallel: int | None,
    backend: str | None,
    hot_reload: bool,
    keep_going: bool,
) -> None:
    """Run one or more run files (alias: start). All are checked before the first starts.

    On a terminal it shows each phase's progress live (episodes done of planned, steps/s,
    elapsed, ETA, each agent's mean reward of its last 100 episodes); piped, a plain line per
    phase start and end and about ten per phase between. A summary table ends each run.

    With --seeds, --set or --parallel, each run file becomes a sweep over every combination
    of the values, each run with a derived uid (see docs/sweeps.md); with --backend
    ray they execute on a Ray cluster (see "Sweeps on Ray").
    """
    from palaestra.core.supervision.console import output_is_a_log
    from palaestra.experiment import ray_cluster

    output_is_a_log()
    if backend is not None:
        state.override(backend=backend)
    ray_cluster.check_backend(state.config)  # the extra and the store, before anything starts
    add_plugin_dirs(once_from_stdin(run_files))
    if seeds is not None or sets or parallel is not None:
        from palaestra.cli.sweeps import start_sweep

        sys.exit(
            start_sweep(
                state,
                run_files,
                seeds=seeds,
                sets=sets,
                parallel=parallel,
                hot_reload=hot_reload,
                keep_going=keep_going,
            )
        )
    from palaestra.core.description.specs import with_hot_reload
    from palaestra.core.supervision.processes import configure_child_logging
    from palaestra.core.supervision.reaper import become_subreaper
    from palaestra.experiment import capacity
    from palaestra.experiment.executor import writable_data_path

    config = state.config
    failed: list[tuple[str, str]] = []  # (run file or run, why): what --keep-going lists
    early = _prestart_writer(config)  # its imports overlap the checks of the run files
    try:
        runs = _load_runs(run_files, config, failed if keep_going else None)
        if hot_reload:
            runs = [with_hot_reload(run) for run in runs]
        capacity.ensure(runs)  # before any process starts: refuse what this machine cannot hold
        if config.backend != "ray":  # (and where the Brains cannot write their dumps)
            writable_data_path(config.data_path)
        configure_child_logging("Executor", logging.getLevelName(config.log_level.upper()))
        become_subreaper()  # orphans of the run's processes come to us: none may outlive it
        worst = _run_all(
            state, runs, quiet=quiet, keep_going=keep_going, failed=failed, early=early
        )
    finally:
        if early is not None:
            early.close()
    if keep_going and len(run_files) > 1:
        _list_failures(len(run_files), failed)
    sys.exit(worst)


def _prestart_writer(config: RuntimeConfig) -> Prestarted | None:
    """The store writer of the first run, forked now (see
    :mod:`palaestra.core.supervision.prestart`); None where the store is off or on Ray, or
    where this process has threads (the command called in a process of its caller's, a fork
    of which could inherit a lock another thread holds)."""
    import threading

    from palaestra.experiment.store_client import store_enabled

    if config.backend == "ray" or not store_enabled(config.store_uri):
        return None
    if threading.active_count() > 1:  # (forked, a thread's lock could stay held for ever)
        return None
    from palaestra.core.description.names import WRITER
    from palaestra.core.supervision.prestart import Prestarted

    return Prestarted(WRITER, "palaestra.store.writer:prepare", config.store_uri)


def _run_all(
    state: State,
    runs: list[Any],
    *,
    quiet: bool,
    keep_going: bool,
    failed: list[tuple[str, str]],
    early: Prestarted | None = None,
) -> int:
    """Execute ``runs`` one after the other; the exit code: the first failure's (with
    --keep-going the worst; a file left out already makes it 2). A failed run is added to
    ``failed``; an unusable store or an interruption stops the rest. ``early``: the first
    run's store writer, forked already."""
    from palaestra.cli.progress import watching
    from palaestra.core.supervision.reaper import take_down_strays
    from palaestra.experiment.executor import execute

    worst = EXIT_INVALID_INPUT if failed else 0
    for run in runs:
        with watching(run, sys.stdout, quiet=quiet) as watcher:
            on_phase = watcher.phase_begins if watcher is not None else None
            outcome = execute(
                run, state.config, on_episode=watcher, on_phase=on_phase, placement=early
            )
        if early is not None:
            early.close()  # (if the run ended before it started its writer)
        take_down_strays("Executor")
        if say_outcome(state, run.uid, outcome):
            failed.append((f"run '{run.uid}' ({run.path})", outcome.message))
        worst = max(worst, outcome.exit_code) if keep_going else worst or outcome.exit_code
        if outcome.exit_code > 1:  # store unusable or interrupted: the next runs would be too
            break
    return worst


def _load_runs(
    run_files: tuple[str, ...], config: RuntimeConfig, failed: list[tuple[str, str]] | None
) -> list[Any]:
    """The runs of ``run_files``, each checked; an invalid one raises, or (``failed`` given:
    --keep-going) is reported, added to ``failed`` and left out."""
    from palaestra.experiment.runfile import load_run_file

    runs = []
    for path in run_files:
        try:
            runs.append(
                load_run_file(
                    path, probe_timeout=config.probe_timeout, start_method=config.start_method
                )
            )
        except InvalidInputError as exc:
            if failed is None:
                raise
            click.echo(f"{ERROR} {exc.format_message()}", err=True)
            failed.append((path, exc.format_message()))
    return runs


def _list_failures(files: int, failed: list[tuple[str, str]]) -> None:
    """The end of --keep-going: how many run files finished, and each failure and why."""
    click.echo(f"{files - len(failed)} of {files} run files finished.")
    if failed:
        click.echo(f"{len(failed)} failed:", err=True)
        for what, why in failed:
            click.echo(f"  {what}: {why.splitlines()[0] if why else ''}", err=True)


@cli.command("experiment-check-syntax")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def experiment_check_syntax(state: State, run_files: tuple[str, ...]) -> None:
    """Validate run files without running them (alias: check)."""
    from palaestra.experiment.runfile import load_run_file

    add_plugin_dirs(once_from_stdin(run_files))
    for path in run_files:
        config = state.config
        run = load_run_file(
            path, probe_timeout=config.probe_timeout, start_method=config.start_method
        )
        count = len(run.phases)
        click.echo(f"{path}: OK ('{run.uid}', {count} phase{'s' * (count != 1)})")


@cli.command("runtime-config-show-default")
def runtime_config_show_default() -> None:
    """Print the built-in runtime configuration."""
    click.echo(RuntimeConfig().dump(), nl=False)


@cli.command("runtime-config-show-effective")
@click.pass_obj
def runtime_config_show_effective(state: State) -> None:
    """Print the runtime configuration in effect (defaults, file, environment), the store
    URI's password hidden (``***``), as every message about the store shows it."""
    config = state.config
    shown = dataclasses.replace(config, store_uri=hide_password(config.store_uri))
    click.echo(shown.dump(), nl=False)


def main() -> None:
    from palaestra.compat import install as install_palaestrai_names
    from palaestra.core.supervision.console import guard_console

    install_palaestrai_names()  # palaestrai.* maps onto palaestra before any plug-in is imported
    from palaestra.core.supervision.reaper import start_undertaker

    start_undertaker()  # even a SIGKILL of this command leaves no process behind

    guard_console()  # a closed or broken console must not decide a run's outcome
    cli(prog_name="palaestra")
