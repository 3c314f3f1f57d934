"""Reading Linux's ``/proc``: the processes there, each one's ``stat`` fields and command line
(and setting this process's: its title).

One place for what the reaper, the undertaker, the liveness judge (and the tests and
benchmarks that look for a run's processes) read about processes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

STATE, PPID, PGRP, SESSION = 0, 1, 2, 3
NICE, START_TIME = 16, 19
"""Indices into :func:`stat`'s fields (``proc(5)``'s fields 3, 4, 5, 6, 19 and 22)."""


def pids() -> Iterator[int]:
    """Every process id in ``/proc`` now (some may be gone by the time they are read)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command's name (which may hold spaces and
    parentheses), from the state on; None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def state(pid: int) -> str:
    """The state letter of process ``pid`` (R, S, D, T, t, Z, ...; "" if it is gone)."""
    fields = stat(pid)
    return fields[STATE].decode() if fields else ""


def cmdline(pid: int) -> str:
    """The command line of ``pid`` with its NUL separators (and a title's NUL padding) as
    spaces, stripped ("" if it is gone or has none)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def in_session(session: int) -> list[tuple[int, str]]:
    """The live (not zombie) processes of ``session``, with their command lines."""
    found = []
    for pid in pids():
        fields = stat(pid)
        if fields is None or fields[STATE] == b"Z":
            continue
        try:
            if int(fields[SESSION]) != session:
                continue
        except (IndexError, ValueError):
            continue
        found.append((pid, cmdline(pid)))
    return found


def title(name: str, detail: str = "") -> str:
    """The command line :func:`set_title` gives: ``palaestra[<name>]``, then ``detail``."""
    return f"palaestra[{name}] {detail}" if detail else f"palaestra[{name}]"


def titled(name: str) -> dict[str, tuple[int, str]]:
    """The live processes titled ``palaestra[<name>]`` (:func:`set_title`), by the detail that
    follows (empty for none), each with its pid and state letter (``T``: stopped); one look
    at ``/proc``."""
    bare = title(name)
    found: dict[str, tuple[int, str]] = {}
    for pid in pids():
        fields = stat(pid)
        if fields is None or fields[STATE] == b"Z":
            continue
        command = cmdline(pid)
        if command == bare or command.startswith(bare + " "):
            found[command[len(bare) + 1 :]] = (pid, fields[STATE].decode())
    return found


def set_title(name: str, detail: str = "") -> None:
    """Show this process as ``palaestra[<name>]`` (its command line in ``ps`` and ``/proc``),
    followed by ``detail`` if given (the executor: the instance it runs)."""
    import setproctitle

    setproctitle.setproctitle(title(name, detail))
