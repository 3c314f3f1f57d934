"""Pausing the recording of a running run: a one-byte flag file every producer reads per step.

The executor creates the flag of its run (0: recording) and names it in the environment
variable :data:`ENV_VAR` before it forks its processes; ``experiment-record pause`` (and a
plug-in's ``context.pause_recording()``) writes 1 into it, ``resume`` 0. Environments and
Muscles map the file into memory and read the byte each time they would write a step's row
(tens of nanoseconds, no system call): a pause takes effect at the next step whose row is
written after it, in every process of the run.
"""

from __future__ import annotations

import mmap
import os
import re
import tempfile
from pathlib import Path

ENV_VAR = "PALAESTRA_RECORDING_FLAG"
"""The path of the running run's pause flag, for the processes the executor forks."""


def flag_path(run_uid: str) -> Path:
    """Where the pause flag of run ``run_uid`` lives on this host."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_uid)
    return Path(tempfile.gettempdir()) / "palaestra-recording" / f"{safe}.flag"


class RecordingSwitch:
    """The pause flag of one run (default: the one :data:`ENV_VAR` names; none: never
    paused)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = os.environ.get(ENV_VAR) or None
        self.path = os.fspath(path) if path is not None else None
        self._map: mmap.mmap | None = None

    def paused(self) -> bool:
        """Whether recording is paused now."""
        if self._map is None:
            if self.path is None or not os.path.exists(self.path):
                return False
            with open(self.path, "rb") as file:
                self._map = mmap.mmap(file.fileno(), 1, access=mmap.ACCESS_READ)
        return self._map[0] == 1

    def create(self) -> None:
        """Create the flag, not paused (replacing an old one)."""
        if self.path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            Path(self.path).write_bytes(b"\0")

    def set(self, paused: bool) -> None:
        """Pause (True) or resume (False) recording; no flag: nothing happens."""
        if self.path is None:
            return
        if not os.path.exists(self.path):
            self.create()
        with open(self.path, "r+b") as file:  # in place: the processes' maps see it
            file.write(b"\1" if paused else b"\0")

    def remove(self) -> None:
        """Remove the flag (the run is over)."""
        if self.path is not None:
            Path(self.path).unlink(missing_ok=True)
