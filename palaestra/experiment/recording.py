"""Recording control of a running run: the executor's side (naming the pause flag for its
processes) and ``experiment-record``'s (setting it, after checking the run is running here).

See :mod:`palaestra.core.recording_control` for the flag; the latency of a pause or a resume is
one step: every producer checks the flag when it writes a step's row.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from palaestra.core.errors import InvalidInputError
from palaestra.core.recording_control import ENV_VAR, RecordingSwitch, flag_path, flags_of
from palaestra.core.supervision import undertaker

# The store (SQLAlchemy) is imported by experiment-record's functions only: the executor imports
# this module for recording_flag, and every process of a run is forked from the executor.


@contextmanager
def recording_flag(run_uid: str) -> Iterator[RecordingSwitch]:
    """While the run executes: its pause flag, created not paused and named in
    :data:`ENV_VAR` for the processes forked from here; removed at the end."""
    switch = RecordingSwitch(flag_path(run_uid))
    switch.create()
    undertaker.leave(str(switch.path))  # (removed below; by the undertaker if this is killed)
    try:
        with exported(ENV_VAR, str(switch.path)):
            yield switch
    finally:
        switch.remove()


@contextmanager
def exported(variable: str, value: str) -> Iterator[None]:
    """While it lasts, this process's environment (which the processes it starts take) has
    ``variable`` set to ``value``; then as before."""
    before = os.environ.get(variable)
    os.environ[variable] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = before


def set_recording(store_uri: str, run_uid: str, paused: bool) -> str:
    """Pause or resume the recording of the running run ``run_uid``; a message for the user.

    Raises:
        InvalidInputError: The run is unknown (``UnknownRunError``), its newest instance is
            not running, or it runs on another host (the flag is a file on the run's host).
        StoreError: The store is unusable.
    """
    from palaestra.store import rows

    found = rows.runs(run=run_uid, store_uri=store_uri)
    if not found:
        rows.phases(run_uid, store_uri=store_uri)  # raises the store's "no run" error
        raise InvalidInputError(f"run {run_uid!r}: no instance in the store")
    status = found[-1]["status"]
    host = _host(store_uri, str(found[-1]["instance_uid"])) if status == "running" else ""
    if status != "running":
        raise InvalidInputError(
            f"run {run_uid!r} is not running (its newest instance is {status}): "
            "only a running run's recording can be paused or resumed"
        )
    if host and host != socket.gethostname():
        raise InvalidInputError(
            f"run {run_uid!r} runs on host {host!r}: pause or resume it there "
            f"(this is {socket.gethostname()!r})"
        )
    flags = flags_of(run_uid)
    if not flags:
        raise InvalidInputError(
            f"run {run_uid!r} is running but has no recording flag ({flag_path(run_uid, 0)}"
            f" with its executor's pid for 0): another user started it (each user's flags "
            "are that user's own), or a palaestra without experiment-record"
        )
    for flag in flags:  # every instance of the run executing on this host
        RecordingSwitch(flag).set(paused)
    what = "paused" if paused else "resumed"
    return f"Recording of run {run_uid} {what} (from the next step of each worker)."


def _host(store_uri: str, instance_uid: str) -> str:
    """The host the instance ``instance_uid`` runs on (the store is known to be readable)."""
    from sqlalchemy import select

    from palaestra.store import tables as t
    from palaestra.store.engine import make_engine

    engine = make_engine(store_uri, read_only=True)
    try:
        with engine.connect() as connection:
            host = connection.scalar(
                select(t.experiment_run_instances.c.host).where(
                    t.experiment_run_instances.c.uid == instance_uid
                )
            )
    finally:
        engine.dispose()
    return str(host or "")
