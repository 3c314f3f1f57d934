"""The undertaker: nothing a run started outlives its executor, even a SIGKILLed one.

palaestra's own processes die with the executor (``PR_SET_PDEATHSIG``) and, ending normally,
take down what they started (:mod:`palaestra.core.supervision.reaper`). A SIGKILLed executor
takes its children with it before they can do so: a plug-in's process (a store's writer, a
co-simulation's simulator, :mod:`multiprocessing`'s resource tracker) would run on.

The undertaker is a small process the ``palaestra`` command forks before anything else. It
notes the command's descendants a few times a second; when the command has ended (told by
``PR_SET_PDEATHSIG``), it kills every one of them still alive (the same pid and start time, so a
reused pid is never hit) and every orphan that appeared in the command's process group after
the command started, round after round until none is left; then it removes the temporary files
and directories named with :func:`leave` (by the command, its forks, and the children it started
afresh: :class:`Pipe`), and exits. Linux only (elsewhere none is started).

An undertaker stopped (SIGSTOP, a debugger) before it watches is not waited for: after
:data:`ARM_TIMEOUT` the command kills it and goes on without one, with a warning naming it.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import time
from typing import Any

from palaestra.core import procfs

SNAPSHOT_EVERY = 0.2
"""Seconds between two notes of the command's descendants."""
FULL_LOOK_EVERY = 5
"""Every this many looks, one reads every process; the looks between read only the processes
that appeared since the last look (see :func:`_note`). What those miss is noted by the next
full look, within a second: a process whose parent was gone when it was read, re-parented into
the command's tree since (a daemon's double fork), or one whose pid another process had at the
last look."""
_ROUNDS = 16
"""Kill rounds at most: each takes the orphans the previous one made."""
ARM_TIMEOUT = 5.0
"""Seconds the command waits for an undertaker that is stopped (SIGSTOP, a job scheduler or a
debugger holds it) before it watches (it takes milliseconds): then the command kills it and
goes on without one. One that runs, however slowly, is waited for."""
_LOOK_MS = 250
"""Milliseconds between two looks at an undertaker that has not yet said it watches."""

_leaving: tuple[int, int] | None = None
"""In the command, its forks and the children it starts afresh (:class:`Pipe`): the pipe on
which :func:`leave` names a path to the undertaker, and its inode (None: no undertaker)."""


def start() -> int | None:
    """Fork the undertaker of this process; its pid (None where not supported). Returns once
    it watches (the command's death can no longer go unnoticed)."""
    if not sys.platform.startswith("linux"):
        return None
    global _leaving
    command = os.getpid()
    ready, armed = os.pipe()
    named, naming = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the undertaker; it exits by itself
        code = 0
        try:
            os.close(ready)
            os.close(naming)
            _serve(command, armed, named)
        except BaseException:  # noqa: BLE001 - never return into the command's code
            code = 1
        finally:
            os._exit(code)
    os.close(armed)
    os.close(named)
    try:
        watching = _armed(pid, ready)
    finally:
        os.close(ready)
    if not watching:
        os.close(naming)
        _give_up(pid)
        return None
    _leaving = (naming, os.fstat(naming).st_ino)
    return pid


def _armed(pid: int, ready: int) -> bool:
    """Wait until undertaker ``pid`` watches (or ended: nothing more to wait for); False when
    it has been stopped for :data:`ARM_TIMEOUT` instead. The seconds count while this process
    saw it stopped: a look a second late means this process did not run either (the whole
    command was stopped and continued, as by Ctrl-Z and ``fg``), and the count begins anew."""
    poller = select.poll()
    poller.register(ready, select.POLLIN)
    stopped = 0.0
    last = time.monotonic()
    while not poller.poll(_LOOK_MS):
        now = time.monotonic()
        seen, last = now - last, now
        if procfs.state(pid) in ("T", "t") and seen < 1.0:
            stopped += seen
            if stopped >= ARM_TIMEOUT:
                return False
        else:
            stopped = 0.0
    os.read(ready, 1)
    return True


def _give_up(pid: int) -> None:
    """Kill and reap the stopped undertaker ``pid``, saying so: the command goes on without
    one (it held the command's standard streams still, and would outlive it, stopped)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # (ends a stopped process too)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    sys.stderr.write(
        f"Warning: the undertaker (pid {pid}), which ends what a killed palaestra command "
        "leaves running, is stopped (SIGSTOP, a job scheduler or a debugger holds it) and did "
        f"not start within {ARM_TIMEOUT:g} s; it was killed, and this command goes on without "
        "one (should the command be killed, processes it started may be left running).\n"
    )


def leave(path: str) -> None:
    """Have the undertaker remove ``path``, a temporary file or directory this process made
    and removes when it ends normally, should the command be killed before (nothing where
    there is no undertaker: a process of a Ray node, say)."""
    fd = descriptor()
    if fd is not None:
        with contextlib.suppress(OSError):  # (an undertaker gone: nothing to tell)
            os.write(fd, os.fsencode(path) + b"\0")  # (shorter than PIPE_BUF: whole)


def descriptor() -> int | None:
    """This process's pipe to the undertaker (None: there is none), while it is still the one
    noted (a fork may have closed the descriptor, and another file may have its number now):
    what a child of :mod:`subprocess` is handed in its ``pass_fds``."""
    if _leaving is None:
        return None
    fd, inode = _leaving
    try:
        return fd if os.fstat(fd).st_ino == inode else None
    except OSError:
        return None


class Pipe:
    """The pipe to the undertaker, for a child started afresh (``spawn``, the fork server),
    which inherits none of its parent's descriptors: among the child's arguments to
    :mod:`multiprocessing` it is passed as a connection is (its descriptor duplicated for the
    child, where it arrives as that descriptor's number), and the child takes it up with
    :func:`adopt`."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from multiprocessing import reduction

        return _detached, (reduction.DupFd(self.fd),)


def _detached(duplicate: Any) -> int:
    fd: int = duplicate.detach()
    return fd


def pipe() -> Pipe | None:
    """This process's pipe to the undertaker, to hand to a child started afresh (None: there
    is no undertaker to tell)."""
    fd = descriptor()
    return None if fd is None else Pipe(fd)


def adopt(fd: int | None) -> None:
    """In a child started afresh: name paths to the undertaker on ``fd``, the pipe its parent
    handed it (see :class:`Pipe`; None: none)."""
    global _leaving
    if fd is not None:
        _leaving = (fd, os.fstat(fd).st_ino)


def _serve(command: int, armed: int, named: int) -> None:
    import ctypes

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # it holds none of the command's pipes open
        os.dup2(null, fd)
    low, high = sorted((armed, named))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 16)
    os.set_blocking(named, False)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # it ends after the command
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGUSR1)  # PR_SET_PDEATHSIG
    os.write(armed, b"1")  # the command goes on: the title (an import) is not waited for
    os.close(armed)
    procfs.set_title("Undertaker")  # (procfs: the supervision's imports would take 0.2 s)
    group = os.getpgid(command)
    since = _start_time(command) or 0
    noted: dict[int, int] = {}
    seen: set[int] = set()
    paths = bytearray()  # the named paths, each ended by a NUL
    looks = 0
    while os.getppid() == command:  # the command lives
        if looks % FULL_LOOK_EVERY == 0:
            seen.clear()  # (every process is new to this look: each one is read)
        _note(command, noted, seen)
        _read(named, paths)  # (read as they come: the pipe never fills)
        looks += 1
        # Woken at once when the command ends (PR_SET_PDEATHSIG), but what the wait returns
        # is not taken as the news: a tracer's stop (py-spy, gdb) ends it with a "signal"
        # nobody sent, and burying the run then would kill it. The loop's test decides.
        signal.sigtimedwait({signal.SIGUSR1}, SNAPSHOT_EVERY)
    _bury(noted | {command: since}, group, since)  # (its own children not noted yet too)
    _read(named, paths)
    _remove(paths)


def _read(named: int, paths: bytearray) -> None:
    """Add what is waiting in the pipe of :func:`leave` to ``paths``."""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(named, 1 << 16):
            paths += chunk


def _remove(paths: bytearray) -> None:
    """Remove each whole path named (those its maker removed are gone already)."""
    for raw in bytes(paths).split(b"\0")[:-1]:
        path = os.fsdecode(raw)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _processes() -> dict[int, tuple[int, int, int]]:
    """Every process: (parent, process group, start time in clock ticks)."""
    found = {}
    for pid in procfs.pids():
        fields = procfs.stat(pid)
        if fields is None or fields[procfs.STATE] == b"Z":
            continue
        found[pid] = (
            int(fields[procfs.PPID]),
            int(fields[procfs.PGRP]),
            int(fields[procfs.START_TIME]),
        )
    return found


def _start_time(pid: int) -> int | None:
    found = _processes().get(pid)
    return found[2] if found else None


def _note(command: int, noted: dict[int, int], seen: set[int]) -> None:
    """Add the command's live descendants (pid: start time) to ``noted``. ``seen`` holds
    every pid of the last look (and then this one's): only the processes that appeared since,
    and the noted ones still there, are read, so a look costs a few reads however many
    processes the machine runs. A process seen before rarely became a descendant since (an
    orphan goes to init or to a subreaper above it); those that did are found by a look with
    ``seen`` empty, which reads every process (:data:`FULL_LOOK_EVERY`)."""
    now = set(procfs.pids())
    new = now - seen
    seen.clear()
    seen.update(now)
    tree = {command}
    for pid, started in noted.items():  # (a pid used again is another process)
        if pid in now and pid not in new and _started(pid) == started:
            tree.add(pid)
    born: dict[int, tuple[int, int]] = {}  # the new processes: parent, start time
    for pid in new:
        fields = procfs.stat(pid)
        if fields is not None and fields[procfs.STATE] != b"Z":
            born[pid] = (int(fields[procfs.PPID]), int(fields[procfs.START_TIME]))
    me = os.getpid()
    grew = True
    while grew:  # (a new process's parent may be new too)
        grew = False
        for pid, (parent, started) in born.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
                if pid != me:
                    noted[pid] = started


def _started(pid: int) -> int | None:
    fields = procfs.stat(pid)
    return None if fields is None else int(fields[procfs.START_TIME])


def _noted(pid: int, noted: dict[int, int], processes: dict[int, tuple[int, int, int]]) -> bool:
    """Whether ``pid`` is a noted process, alive or dying (gone from ``processes`` already; a
    pid used again since is another process)."""
    started = noted.get(pid)
    return started is not None and processes.get(pid, (0, 0, started))[2] == started


def _bury(noted: dict[int, int], group: int, since: int) -> None:
    """Kill what is left of the command's processes, round after round: those noted, their
    children not noted yet (a plug-in's, started since the last look: its parent may be dying
    still, and it not yet an orphan) and the processes that appeared in the command's process
    group since it started and are orphans or about to be (their parent gone or dying: one of
    the run's processes the undertaker had not noted yet, killed with the command, when the
    command died within a look of its start)."""
    me = os.getpid()
    for _ in range(_ROUNDS):
        processes = _processes()
        targets = [
            pid
            for pid, (parent, pgid, started) in processes.items()
            if pid != me
            and (
                noted.get(pid) == started
                or _noted(parent, noted, processes)
                or (
                    pgid == group and started >= since and (parent == 1 or parent not in processes)
                )
            )
        ]
        if not targets:
            return
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)  # their children are re-parented before the next round looks
