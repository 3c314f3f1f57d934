"""The ``palaestra`` command line: thin commands over the library.

Exit codes: 0 success, 1 run failed, 2 invalid input, 3 store unusable, 130/143 interrupted
by SIGINT/SIGTERM.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import Any

import click

from palaestra import __version__
from palaestra.cli import database, replay, results
from palaestra.cli.common import State
from palaestra.core.errors import EXIT_SIGINT, EXIT_SIGTERM, PalaestraError
from palaestra.experiment.runtime_config import RuntimeConfig

EXIT_CODES = """\b
Exit codes:
  0    success
  1    a run failed (the message names the process and the error)
  2    invalid input (run file, runtime config, arguments)
  3    the store is unusable
  130  interrupted by SIGINT (Ctrl-C), 143 by SIGTERM
"""

ALIASES = {
    "start": "experiment-start",
    "check": "experiment-check-syntax",
    "list": "experiment-list",
}


class AliasedGroup(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else name), cmd, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PalaestraError as exc:
            click.echo(f"Error: {exc.format_message()}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles its own): no traceback
            click.echo("Interrupted.", err=True)
            ctx.exit(EXIT_SIGINT)
        except Terminated:
            click.echo("Terminated.", err=True)
            ctx.exit(EXIT_SIGTERM)


class Terminated(BaseException):
    """SIGTERM outside a run (a run handles its own): unwinds like Ctrl-C, then exits 143."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


@click.group(cls=AliasedGroup, epilog=EXIT_CODES)
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
@click.argument("run_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def experiment_start(state: State, run_files: tuple[str, ...]) -> None:
    """Run one or more run files (alias: start). All are checked before the first starts."""
    from palaestra.core.processes import configure_child_logging
    from palaestra.core.reaper import become_subreaper, take_down_strays
    from palaestra.experiment import capacity
    from palaestra.experiment.executor import execute
    from palaestra.experiment.runfile import load_run_file

    config = state.config
    runs = [load_run_file(path, probe_timeout=config.probe_timeout) for path in run_files]
    capacity.ensure(runs)  # before any process starts: refuse what this machine cannot hold
    configure_child_logging("Executor", logging.getLevelName(config.log_level.upper()))
    become_subreaper()  # orphans of the run's processes come to us: none may outlive the run
    worst = 0
    for run in runs:
        outcome = execute(run, config)
        take_down_strays("Executor")
        if outcome.exit_code == 0:
            click.echo(f"Run '{run.uid}' finished (instance {outcome.instance_uid}).")
        elif outcome.exit_code in (1, 2, 3):
            click.echo(f"Error: run '{run.uid}' failed: {outcome.message}", err=True)
        else:
            click.echo(f"Run '{run.uid}' {outcome.message}; marked cancelled.", err=True)
        worst = worst or outcome.exit_code
        if outcome.exit_code > 1:  # store unusable or interrupted: the next runs would be too
            break
    sys.exit(worst)


@cli.command("experiment-check-syntax")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.pass_obj
def experiment_check_syntax(state: State, run_files: tuple[str, ...]) -> None:
    """Validate run files without running them (alias: check)."""
    from palaestra.experiment.runfile import load_run_file

    for path in run_files:
        run = load_run_file(path, probe_timeout=state.config.probe_timeout)
        click.echo(f"{path}: OK ('{run.uid}', {len(run.phases)} phases)")


@cli.command("runtime-config-show-default")
def runtime_config_show_default() -> None:
    """Print the built-in runtime configuration."""
    click.echo(RuntimeConfig().dump(), nl=False)


@cli.command("runtime-config-show-effective")
@click.pass_obj
def runtime_config_show_effective(state: State) -> None:
    """Print the runtime configuration in effect (defaults, file, environment)."""
    click.echo(state.config.dump(), nl=False)


for _module in (database, results, replay):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    from palaestra.compat import install as install_palaestrai_names
    from palaestra.core.console import guard_console

    install_palaestrai_names()  # palaestrai.* maps onto palaestra before any plug-in is imported

    guard_console()  # a closed or broken console must not decide a run's outcome
    signal.signal(signal.SIGTERM, _terminated)  # checking run files cleans up, then exits 143
    cli(prog_name="palaestra")
