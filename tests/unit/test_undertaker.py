"""The undertaker's look at the command's descendants (palaestra.core.supervision.undertaker),
in this process with real child processes."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from palaestra.core import procfs
from palaestra.core.supervision import undertaker

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc"),
]

PARENT = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)
DEAD = ("Z", "X", "")
"""A process's state once it ended (a zombie, dead, or gone)."""


@pytest.fixture
def family() -> Iterator[tuple[int, int]]:
    """A child of this process and its own child, running: their pids."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    grandchild = None
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        yield parent.pid, grandchild
    finally:
        if grandchild is not None:
            os.kill(grandchild, 9)
        parent.kill()
        parent.wait()
        assert parent.stdout is not None
        parent.stdout.close()
    if grandchild is not None:  # dead (a zombie until init reaps it), not running on
        deadline = time.monotonic() + 10
        while procfs.state(grandchild) not in DEAD and time.monotonic() < deadline:
            os.sched_yield()
        assert procfs.state(grandchild) in DEAD


def test_a_look_notes_the_descendants_and_reads_only_the_processes_that_are_new(
    family: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first look notes this process's child and grandchild with their start times (and
    nothing else: not init). A second look reads the ``stat`` of the noted processes and of
    those that appeared since, none of the others: a look costs a few reads however many
    processes the machine runs."""
    noted: dict[int, int] = {}
    seen: set[int] = set()
    undertaker._note(os.getpid(), noted, seen)
    for pid in family:
        fields = procfs.stat(pid)
        assert fields is not None
        assert noted[pid] == int(fields[procfs.START_TIME])
    assert 1 not in noted and os.getpid() not in noted
    before = set(seen)
    read: list[int] = []
    stat = procfs.stat

    def counted(pid: int) -> list[bytes] | None:
        read.append(pid)
        return stat(pid)

    monkeypatch.setattr(procfs, "stat", counted)
    undertaker._note(os.getpid(), noted, seen)
    assert set(family) <= set(read)
    assert set(read) <= set(noted) | (seen - before)
    assert len(before) > len(read)  # (this machine runs more than the noted processes)


def test_a_look_that_reads_every_process_notes_what_the_looks_between_missed(
    family: tuple[int, int],
) -> None:
    """A descendant whose pid the last look had already seen (a pid used again, or a process
    re-parented into the command's tree after it was read) is not read by a look between; the
    next look that starts with nothing seen reads every process and notes it."""
    noted: dict[int, int] = {}
    seen = set(procfs.pids())  # (as if the last look had seen them, and noted none)
    undertaker._note(os.getpid(), noted, seen)
    assert not set(family) & set(noted)
    seen.clear()  # (what the undertaker does every FULL_LOOK_EVERY looks)
    undertaker._note(os.getpid(), noted, seen)
    assert set(family) <= set(noted)


COMMAND = (
    "import subprocess, sys\n"
    "from palaestra.core.supervision import undertaker\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "undertaker.SNAPSHOT_EVERY = 0.001\n"
    "watcher = undertaker.start()\n"
    "print(watcher, child.pid, flush=True)\n"
    "sys.stdin.readline()\n"
    "print(child.poll(), flush=True)\n"
    "child.kill()\n"
)
"""A command with a child and an undertaker: prints their pids, and once a line comes on its
stdin, whether the child has ended (``None``: it runs). The child is started first, so that
the undertaker's first look, before its first wait, notes it; the undertaker waits 1 ms
between looks, not 0.2 s, so that a stop often comes as a wait ends (where it breaks the
wait)."""

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000
"""``waitpid``'s ``__WALL``: a tracee that is not this process's child."""


def _interrupt(pid: int, libc: ctypes.CDLL) -> None:
    """Stop ``pid`` for a moment as a profiler or a debugger does (``py-spy record``
    samples a process so, ``gdb -p`` attaches so), and let it go on."""
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        errno = ctypes.get_errno()
        pytest.skip(f"ptrace is not permitted here ({os.strerror(errno)})")
    try:
        assert libc.ptrace(PTRACE_INTERRUPT, pid, None, None) == 0
        os.waitpid(pid, WALL)
    finally:
        libc.ptrace(PTRACE_DETACH, pid, None, None)


def test_a_profiler_stopping_the_undertaker_does_not_make_it_bury_a_live_command() -> None:
    """``py-spy record`` on the undertaker killed the run it watched: a tracer's stop ends
    the undertaker's wait for the command's death with a "signal" nobody sent, which it
    took as the command's death and buried the run's processes (the child, here, within a
    few hundred stops). Stopped two thousand times, it leaves the child alone."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert command.stdin is not None and command.stdout is not None
    try:
        watcher, child = (int(pid) for pid in command.stdout.readline().split())
        deadline = time.monotonic() + 20  # its title is set as it begins to watch
        while procfs.cmdline(watcher) != "palaestra[Undertaker]":
            assert time.monotonic() < deadline, procfs.cmdline(watcher)
            time.sleep(0.01)
        for _ in range(2000):
            _interrupt(watcher, libc)
        assert procfs.state(watcher) not in DEAD
        command.stdin.write("\n")
        command.stdin.flush()
        assert command.stdout.readline().strip() == "None"  # the child still ran
    finally:
        command.kill()
        command.wait()
        command.stdin.close()
        command.stdout.close()


def test_the_burial_takes_the_children_of_the_noted_that_no_look_noted(
    family: tuple[int, int],
) -> None:
    """A plug-in's process started since the undertaker's last look, its parent noted: when
    the command ended, that parent died at once (its parent-death signal), and the burial's
    first round found it not yet an orphan (its parent dying still) and nothing else to kill,
    so it ended the burial; the process ran on (under load, two times in five)."""
    parent, grandchild = family
    started = undertaker._start_time(parent)
    assert started is not None
    undertaker._bury({parent: started}, group=-1, since=0)  # (no group: only the noted)
    deadline = time.monotonic() + 10
    while procfs.state(grandchild) not in DEAD and time.monotonic() < deadline:
        os.sched_yield()
    assert procfs.state(grandchild) in DEAD


def test_the_burial_takes_a_process_of_the_group_whose_parent_is_dying(
    family: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command killed within a look of its start (the Python API's executor forked a run
    that started a plug-in's process in 0.2 s): nothing was noted; the command's child died
    with it (its parent-death signal), and the burial's first round found that child's own
    child neither noted nor an orphan yet (its parent dying, gone from ``/proc`` already), so
    it ended the burial and the process ran on (under load, about one time in ten). A process
    of the command's group, started since the command, whose parent is gone or dying is
    taken."""
    parent, grandchild = family
    started = undertaker._start_time(grandchild)
    assert started is not None
    group = os.getpgid(grandchild)
    looks = iter([{grandchild: (parent + 10_000_000, group, started)}])  # (its parent: gone)
    monkeypatch.setattr(undertaker, "_processes", lambda: next(looks, {}))
    undertaker._bury({}, group=group, since=started)
    deadline = time.monotonic() + 10
    while procfs.state(grandchild) not in DEAD and time.monotonic() < deadline:
        os.sched_yield()
    assert procfs.state(grandchild) in DEAD
