"""Pausing the recording of a running run: a one-byte flag file every producer reads per step.

The executor creates the flag of its run (0: recording; one per executing process, so that two
instances of one run file never share it) and names it in the environment
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


def flag_path(run_uid: str, pid: int | None = None) -> Path:
    """Where the pause flag of run ``run_uid`` executed by process ``pid`` (default: this one)
    lives on this host.

    One flag per executing process, not per run: two instances of the same run file may execute
    at once, and one creating (truncating) a shared file under the other's memory maps would
    kill the other's processes with SIGBUS, and one removing it at its end would take the other
    out of ``experiment-record``'s reach.
    """
    return _directory() / f"{_safe(run_uid)}.{os.getpid() if pid is None else pid}.flag"


def flags_of(run_uid: str) -> list[Path]:
    """The pause flags of run ``run_uid`` on this host whose executor is alive; a flag left by
    an executor that was killed is removed."""
    pattern = re.compile(re.escape(_safe(run_uid)) + r"\.(\d+)\.flag")
    found: list[Path] = []
    try:
        names = sorted(os.listdir(_directory()))
    except OSError:  # no run made a flag yet
        return found
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        path = _directory() / name
        if _alive(int(match.group(1))):
            found.append(path)
        else:
            path.unlink(missing_ok=True)
    return found


def _directory() -> Path:
    return Path(tempfile.gettempdir()) / "palaestra-recording"


def _safe(run_uid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_uid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


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
        """Create the flag, not paused (replacing an old one by a new file: a process that
        still maps the old one keeps reading it, never a truncated file)."""
        if self.path is not None:
            path = Path(self.path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
            fresh.write_bytes(b"\0")
            os.replace(fresh, path)

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
