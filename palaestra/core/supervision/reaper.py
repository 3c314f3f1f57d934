"""Taking down what a process started: stray children, found, named, killed and reaped.

A plug-in may start processes of its own and leave them running. palaestra does not let them
outlive the run or decide its outcome: every palaestra process is a child subreaper (Linux
``PR_SET_CHILD_SUBREAPER``), so an orphan is re-parented to the nearest palaestra process
instead of to init; at its end, a palaestra process kills every child it still has, logs a
warning naming each, and reaps it, until none is left (killing one re-parents its children).

A stray does not fail the run. The helpers :mod:`multiprocessing` starts for the forkserver and
spawn start methods are no strays
(:func:`palaestra.core.supervision.start_methods.helper_pids`): they end by themselves.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import select
import signal

from palaestra.core import procfs
from palaestra.core.supervision import undertaker
from palaestra.core.supervision.start_methods import helper_pids

LOG = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
REAP_TIMEOUT = 2.0
"""Seconds to wait for one killed stray to be gone before giving up on reaping it."""
_ROUNDS = 16
"""Kill-and-reap rounds at most: each round takes the orphans the previous one made."""


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans; False where unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # not Linux
        return False


def children() -> list[int]:
    """The pids of this process's direct children (including orphans re-parented to it)."""
    me = os.getpid()
    try:
        found: set[int] = set()
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children", encoding="ascii") as f:
                found.update(int(pid) for pid in f.read().split())
        return sorted(found)
    except (OSError, ValueError):  # no CONFIG_PROC_CHILDREN: scan every process
        return _children_by_scan(me)


def _children_by_scan(me: int) -> list[int]:
    found = []
    for pid in procfs.pids():
        fields = procfs.stat(pid)
        if fields is not None and fields[procfs.PPID] == str(me).encode():
            found.append(pid)
    return sorted(found)


def describe(pid: int) -> str:
    """``pid 123 ('palaestra[Environment-env-0]')``: the pid and the command line or title."""
    cmdline = procfs.cmdline(pid)
    return f"pid {pid} ('{cmdline}')" if cmdline else f"pid {pid}"


_SPARED: set[int] = set()
"""Children of this process that are no strays (the undertaker: it ends after this one)."""


def start_undertaker() -> None:
    """Start this process's undertaker (:func:`~palaestra.core.supervision.undertaker.start`),
    which :func:`take_down_strays` leaves to end by itself."""
    watcher = undertaker.start()
    if watcher is not None:
        spare(watcher)


def spare(pid: int) -> None:
    """Leave child ``pid`` to end by itself: :func:`take_down_strays` does not kill it."""
    _SPARED.add(pid)


def take_down_strays(owner: str, *, wait: bool = True) -> list[int]:
    """Kill (SIGKILL) and reap every child this process still has; returns their pids.

    Call it when the process's own palaestra children have ended: whatever is left is a
    plug-in's (or an orphan of one), except :mod:`multiprocessing`'s helpers, which are spared.
    Each is logged as a warning naming ``owner`` (the process that ends) and the stray. With
    ``wait=False`` (a process about to vanish, whose parent died) the helpers are killed too,
    and nothing is reaped or logged.
    """
    killed: list[int] = []
    spared = (helper_pids() if wait else set()) | _SPARED
    for _ in range(_ROUNDS):
        strays = [pid for pid in children() if pid not in killed and pid not in spared]
        if not strays:
            break
        for pid in strays:
            if wait and not _ended(pid):  # an ended one is only reaped, without a word
                LOG.warning(
                    "%s: a process it started, %s, was still running at its end; killed it. "
                    "A plug-in must end the processes it starts (in shutdown() or teardown()).",
                    owner,
                    describe(pid),
                )
            _kill(pid)
        killed.extend(strays)
        if not wait:
            break
        for pid in strays:
            _reap(pid)
    return killed


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended already (a zombie waiting to be reaped)."""
    return procfs.state(pid) in ("Z", "X", "")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _reap(pid: int) -> None:
    """Collect the exit status of ``pid`` (killed), through multiprocessing if it is its child.

    A ``multiprocessing.Process`` is joined through its own object, so that multiprocessing's
    exit handler, which joins its children later, finds it ended instead of waiting for it.
    """
    for process in multiprocessing.active_children():
        if process.pid == pid:
            process.join(REAP_TIMEOUT)
            if process.exitcode is not None:
                return
    _wait_gone(pid, REAP_TIMEOUT)
    with contextlib.suppress(ChildProcessError):  # reaped already
        os.waitpid(pid, os.WNOHANG)


def _wait_gone(pid: int, timeout: float) -> None:
    """Wait (bounded) until ``pid`` has ended; no-op where pidfds are not available."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll(timeout * 1000)
    finally:
        os.close(fd)
