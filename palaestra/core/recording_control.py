"""Pausing the recording of a running run: a flag file that every producer checks per step.

The executor names the flag of its run in the environment variable :data:`ENV_VAR` before it
forks its processes; ``experiment-record pause`` (and a plug-in's
``context.pause_recording()``) creates the file, ``resume`` removes it. Environments and
Muscles check it (one ``stat``) each time they would write a step's row: a pause takes effect
at the next step whose row is written after it, in every process of the run.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

ENV_VAR = "PALAESTRA_RECORDING_FLAG"
"""The path of the running run's pause flag, for the processes the executor forks."""


def flag_path(run_uid: str) -> Path:
    """Where the pause flag of run ``run_uid`` lives on this host."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_uid)
    return Path(tempfile.gettempdir()) / "palaestra-recording" / f"{safe}.paused"


class RecordingSwitch:
    """The pause flag of one run (default: the one :data:`ENV_VAR` names; none: never
    paused)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = os.environ.get(ENV_VAR) or None
        self.path = os.fspath(path) if path is not None else None

    def paused(self) -> bool:
        """Whether recording is paused now."""
        return self.path is not None and os.path.exists(self.path)

    def set(self, paused: bool) -> None:
        """Pause (True) or resume (False) recording; no flag: nothing happens."""
        if self.path is None:
            return
        if paused:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            Path(self.path).touch()
        else:
            Path(self.path).unlink(missing_ok=True)
