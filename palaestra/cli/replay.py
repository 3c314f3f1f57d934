"""``palaestra experiment-replay``: drive a recorded run's environments with its recorded set
points and check that they give what was recorded (see :mod:`palaestra.replay`)."""

from __future__ import annotations

import sys

import click

from palaestra.cli.common import State, instance_named

REPLAY_EPILOG = """\b
Example:
  palaestra experiment-replay my-run --phase 0 --episode 2 --worker 1
  palaestra experiment-replay my-run --record    # the replay as a new instance

\b
Exit codes:
  0    the replay reproduced the record (sensors, rewards, done of every step)
  1    it diverged: the first divergence is shown (step, uid, recorded and replayed)
  2    invalid input (no such run, instance, phase, worker or episode)
  3    the store is unusable
  4    an environment declares replay_deterministic = False (use --no-compare)
"""


@click.command("experiment-replay", epilog=REPLAY_EPILOG)
@click.argument("run")
@click.option("--instance", help="The run instance's uid (default: the newest).")
@click.option("--phase", help="The phase's index or name (default: every phase).")
@click.option("--episode", type=click.IntRange(min=0), help="Only this episode (0-based).")
@click.option("--worker", type=click.IntRange(min=0), help="Only this worker.")
@click.option(
    "--until", type=click.IntRange(min=1), help="Stop each episode after this step (1-based)."
)
@click.option("--no-compare", is_flag=True, help="Replay without comparing with the record.")
@click.option(
    "--record",
    is_flag=True,
    help="Write the replay into the store as a new instance of the run, linked to its source.",
)
@click.pass_obj
def experiment_replay(
    state: State,
    run: str,
    instance: str | None,
    phase: str | None,
    episode: int | None,
    worker: int | None,
    until: int | None,
    no_compare: bool,
    record: bool,
) -> None:
    """Replay a recorded run: rebuild its environments (classes, params and seeds from the
    store) and drive them with the recorded set points (no Muscles, no Brains), comparing
    sensor values, rewards and done flags with the record step by step."""
    from palaestra.replay.session import replay_run
    from palaestra.store import rows

    if instance is not None:  # (the start of its uid, as list shows it: as resume and show)
        instance = instance_named(rows.runs(run=run, store_uri=state.config.store_uri), instance)
    outcome = replay_run(
        run,
        instance=instance,
        phase=int(phase) if phase is not None and phase.isdigit() else phase,
        episode=episode,
        worker=worker,
        until=until,
        compare=not no_compare,
        record=record,
        store_uri=state.config.store_uri,
    )
    phases = ", ".join(str(p) for p in outcome.phases)
    done = (
        f"run '{run}' instance {outcome.instance}, phase {phases}: {outcome.episodes} "
        f"episodes, {outcome.steps} steps replayed"
    )
    if outcome.copy is not None:
        click.echo(f"Recorded the replay as instance {outcome.copy} of run '{run}'.")
    if outcome.divergence is not None:
        click.echo(f"Diverged from the record: {outcome.divergence} ({done}).", err=True)
        sys.exit(1)
    verdict = "not compared" if no_compare else "identical to the record"
    click.echo(f"Replayed {done}: {verdict}.")


COMMANDS = [experiment_replay]
