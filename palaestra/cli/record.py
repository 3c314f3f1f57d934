"""``palaestra experiment-record pause|resume RUN``: pause or resume the recording of a running
run's steps (see :mod:`palaestra.experiment.recording`)."""

from __future__ import annotations

import click

from palaestra.cli.common import State

RECORD_EPILOG = """\b
Paused steps run but are not written (world_states, muscle_actions); the store notes the gap
per phase and worker (recording_gaps), and experiment-replay refuses to replay across it.
Latency: each worker's next step. The run must be running on this host.

\b
Example:
  palaestra experiment-record pause my-run
  palaestra experiment-record resume my-run
"""


@click.command("experiment-record", epilog=RECORD_EPILOG)
@click.argument("action", type=click.Choice(["pause", "resume"]))
@click.argument("run")
@click.pass_obj
def experiment_record(state: State, action: str, run: str) -> None:
    """Pause or resume recording the steps of the running run RUN."""
    from palaestra.experiment.recording import set_recording

    click.echo(set_recording(state.config.store_uri, run, paused=action == "pause"))


COMMANDS = [experiment_record]
