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
import stat
import tempfile
from pathlib import Path

from palaestra.core.errors import PalaestraError

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
    """This user's directory of flags on this host: one per user (mode 0700), as another
    user's would be closed to its runs."""
    return Path(tempfile.gettempdir()) / f"palaestra-recording-{os.getuid()}"


def _made(directory: Path) -> None:
    """Make ``directory`` (this user's, mode 0700) if it is not there yet, and check that the
    one there is this user's: a directory of a shared temporary directory may have been made
    by another user, who could then remove or replace the run's flags.

    Raises:
        PalaestraError: It is not a directory, or another user's.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = directory.lstat()
    if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid():
        if stat.S_IMODE(found.st_mode) != 0o700:  # (made by this user some other way)
            directory.chmod(0o700)
    else:
        raise PalaestraError(
            f"{directory}, the directory of the runs' recording flags, is not this user's "
            f"own directory (owner uid {found.st_uid}, {stat.filemode(found.st_mode)}; this "
            f"is uid {os.getuid()}): remove it, or set TMPDIR to a directory of your own"
        )


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
            _made(path.parent)
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
