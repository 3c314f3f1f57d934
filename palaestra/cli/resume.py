"""``palaestra experiment-resume``: continue an interrupted run instance as a new instance of
the same run (see :mod:`palaestra.experiment.resume`)."""

from __future__ import annotations

import dataclasses
import logging
import sys

import click

from palaestra.cli.common import State, say_outcome

RESUME_EPILOG = """\b
Example:
  palaestra experiment-start my-run.yml        # interrupted (Ctrl-C), failed, or killed
  palaestra experiment-list                    # its instance: cancelled, error or stale
  palaestra experiment-resume my-run           # continues the newest instance
  palaestra experiment-resume my-run --instance 3f2a

\b
An instance left running by a killed executor shows as stale once its heartbeat is older
than 30 s; a running (not stale), a stopped (its executor stopped with Ctrl-Z on this
machine) or finished instance is refused, and so is one that another instance continues
already (resumed before, or being resumed now): resume the newest instance of its chain.

\b
Exit codes:
  0    the resumed instance finished
  1    it failed
  2    invalid input (no such run or instance; it is finished, still running or stopped,
       or resumed already)
  3    the store is unusable
  130  interrupted (Ctrl-C); it can be resumed again
"""


@click.command("experiment-resume", epilog=RESUME_EPILOG)
@click.argument("run")
@click.option("--instance", help="The interrupted instance's uid (default: the newest).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary while it runs.")
@click.option(
    "--reload",
    "hot_reload",
    is_flag=True,
    help="Hot reload, as experiment-start --reload (the store does not keep that flag).",
)
@click.pass_obj
def experiment_resume(
    state: State, run: str, instance: str | None, quiet: bool, hot_reload: bool
) -> None:
    """Continue RUN's interrupted instance (cancelled, error or stale) as a new instance.

    Finished phases are skipped; the phase it stopped in starts again at the first episode
    that not every worker completed, with the Brains' dumps of the episode before and the
    seeds the uninterrupted run uses there. The run's rows (results, experiment-show, the
    query functions) are then those of the completed episodes of its instances together.
    """
    from palaestra.cli.progress import watching
    from palaestra.core.description.import_path import add_plugin_dirs
    from palaestra.core.description.specs import with_hot_reload
    from palaestra.core.supervision.console import output_is_a_log
    from palaestra.core.supervision.processes import configure_child_logging
    from palaestra.core.supervision.reaper import become_subreaper, take_down_strays
    from palaestra.experiment.executor import execute
    from palaestra.experiment.resume import load_plan

    output_is_a_log()
    config = state.config
    plan = load_plan(
        config.store_uri,
        run,
        instance,
        config.probe_timeout,
        on_file=lambda path: add_plugin_dirs([path]),
        start_method=config.start_method,
    )
    if hot_reload:
        plan = dataclasses.replace(plan, run=with_hot_reload(plan.run))
    click.echo(
        f"Resuming instance {plan.instance_uid} ({plan.status}) of run '{run}' at phase "
        f"{plan.at.phase}, episode {plan.at.first_episode}.",
        err=True,
    )
    configure_child_logging("Executor", logging.getLevelName(config.log_level.upper()))
    become_subreaper()
    with watching(plan.run, sys.stdout, quiet=quiet) as watcher:
        on_phase = watcher.phase_begins if watcher is not None else None
        outcome = execute(plan.run, config, on_episode=watcher, on_phase=on_phase, resume=plan.at)
    take_down_strays("Executor")
    say_outcome(state, run, outcome)
    sys.exit(outcome.exit_code)


COMMANDS = [experiment_resume]
