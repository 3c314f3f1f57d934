"""Noticing a frozen process: every process of a run keeps marks that the executor reads.

A process that dies is noticed at once (its parent sees it end); one that is frozen (stopped,
stuck in native code that holds the GIL, or in a step that never returns) is not, and a run
would hang for ever. So each child of the executor maps a small file of its own in the run's
private directory and keeps three marks there, all ``time.monotonic()`` seconds:

- ``beat``: set by its control thread (its asyncio loop) every :data:`BEAT_SECONDS`; a loop
  that cannot run stops beating.
- ``step``: since when its hot loop has worked on the current step, 0 while it waits for a
  peer (two stores per wait).
- ``held``: since when its control thread has been inside a store call (which blocks its loop
  legitimately), 0 otherwise.

The executor's :class:`Judge` reads every running child's marks a few times a second and fails
the run, naming the process, when its beat or its step is older than ``answer_timeout`` (the
store writer's: the shorter of it and ``store_timeout``; while inside a store call and not
stopped, the longer). A process on another host is not judged here; its peers' answer timeouts
still are.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from palaestra.core import procfs
from palaestra.core.description.names import WRITER
from palaestra.core.files import file_for

BEAT_SECONDS = 0.25
"""How often a process's control thread beats, and how often the judge looks."""

PAUSE_SECONDS = 1.0
"""A look that comes this much later than due: the looking process itself did not run."""

_PID, _BEAT, _HELD, _STEP = range(4)
_monotonic = time.monotonic
_SIZE = 4 * 8  # four float64

Marks = Any
"""A ``memoryview`` of float64 over a mapped file (typeshed types a cast view's items as int)."""

_marks: Marks = None
"""This process's marks (None outside a run's child: nothing is marked)."""


def path(run_dir: str, name: str, pid: int) -> str:
    """The file of the marks of process ``name`` with ``pid`` (a phase reuses names: the pid
    keeps a new process's file apart from an old one's)."""
    return file_for(run_dir, f"{name}-{pid}", ".marks")


def begin(run_dir: str, name: str) -> None:
    """Create and map this process's marks (in a child, before it builds its component)."""
    global _marks
    target = path(run_dir, name, os.getpid())
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, _SIZE)  # full size before anyone maps it
        mapped = mmap.mmap(fd, _SIZE)
    finally:
        os.close(fd)
    marks: Marks = memoryview(mapped).cast("d")
    marks[_PID] = os.getpid()
    marks[_BEAT] = time.monotonic()
    _marks = marks


def beat() -> None:
    if _marks is not None:
        _marks[_BEAT] = time.monotonic()


async def beating() -> None:
    """Beat for ever (a task of the control thread's loop)."""
    while True:
        beat()
        await asyncio.sleep(BEAT_SECONDS)


def step_begins() -> None:
    """The step thread starts working (its loop begins)."""
    if _marks is not None:
        _marks[_STEP] = time.monotonic()


def step_ends() -> None:
    """The step thread ended: nothing is in a step."""
    if _marks is not None:
        _marks[_STEP] = 0.0


def waiting() -> float:
    """A wait for a peer begins (the caller is not stuck while it lasts); returns what
    :func:`waited` needs. In a thread that marks no step, nothing changes."""
    marks = _marks
    if marks is None:
        return 0.0
    working: float = marks[_STEP]
    marks[_STEP] = 0.0
    return working


def waited(working: float) -> None:
    """The wait is over: the step thread works again (if it was working before)."""
    if working:
        _marks[_STEP] = _monotonic()


@contextlib.contextmanager
def holding() -> Iterator[None]:
    """Around a store call of the control thread: its loop may not beat until it returns,
    for up to ``store_timeout``."""
    marks = _marks
    if marks is None:
        yield
        return
    outer = marks[_HELD]
    if not outer:
        marks[_HELD] = time.monotonic()
    try:
        yield
    finally:
        if not outer:
            marks[_HELD] = 0.0
            marks[_BEAT] = time.monotonic()


class Looks:
    """The times of a process's regular looks at others (every ``every`` seconds) and when it
    last went on after a pause of its own: a look later than due by more than
    :data:`PAUSE_SECONDS` means that it did not run in between, most likely because the whole
    run was stopped and continued (Ctrl-Z and ``fg``, a suspended job or virtual machine). A
    wait is then counted from when it went on (:meth:`since`); a process frozen alone is still
    found, a pause later at most."""

    __slots__ = ("every", "last", "resumed")

    def __init__(self, every: float) -> None:
        self.every = every
        self.last = _monotonic()
        self.resumed = 0.0

    def look(self) -> float:
        """The time of this look (``time.monotonic()``), noting a pause before it."""
        now = _monotonic()
        if now - self.last > self.every + PAUSE_SECONDS:
            self.resumed = now
        self.last = now
        return now

    def since(self, mark: float, now: float) -> float:
        """The seconds from ``mark`` to ``now`` that this process saw go by."""
        return now - max(mark, self.resumed)


def seen_waits(seconds: float) -> Iterator[float]:
    """The slices (at most :data:`BEAT_SECONDS` each) to wait in until this process saw
    ``seconds`` go by: a blocking wait's timeout that a stop of the whole run does not use up
    (see :class:`Looks`: from a pause on, the time is counted anew)."""
    looks = Looks(BEAT_SECONDS)
    began = looks.last
    while True:
        left = seconds - looks.since(began, looks.look())
        if left < 1e-3:  # (a rest lost in rounding would never pass)
            return
        yield min(left, BEAT_SECONDS)


@contextlib.asynccontextmanager
async def seen_timeout(seconds: float) -> AsyncIterator[None]:
    """``asyncio.timeout(seconds)`` counting only the time this process saw go by (see
    :func:`seen_waits`): a run stopped as a whole (Ctrl-Z and ``fg``) while one of its
    processes waits for another to start, answer or end is not late for it."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as timeout:
        slices = seen_waits(seconds)
        handle: asyncio.Handle

        def look() -> None:
            nonlocal handle
            wait = next(slices, None)
            if wait is None:
                timeout.reschedule(loop.time())  # (expires now)
            else:
                handle = loop.call_later(wait, look)

        handle = loop.call_soon(look)
        try:
            yield
        finally:
            handle.cancel()


@dataclass(frozen=True)
class Verdict:
    """Why a process is taken for frozen, in words for the run's reason."""

    kind: str
    message: str


class Judge:
    """The executor's reading of its children's marks.

    Args:
        run_dir: The run's private directory (where the children's files are).
        answer_timeout: Seconds a process may go without a beat, or work on one step.
        store_timeout: The writer's limit: it may go without a beat for the shorter of this
            and ``answer_timeout`` (a stopped writer is found within whichever a user set
            lower), and hold its loop in one store call for the longer (there the executor's
            own request, bounded by ``store_timeout`` too, names the cause first).
    """

    def __init__(self, run_dir: str, answer_timeout: float, store_timeout: float) -> None:
        self.run_dir = run_dir
        self.answer_timeout = max(answer_timeout, 4 * BEAT_SECONDS)
        self.held_timeout = max(store_timeout, self.answer_timeout)
        if store_timeout < self.answer_timeout:
            self.writer_timeout = max(store_timeout, 4 * BEAT_SECONDS)
            self.writer_limit = f"store_timeout is {self.writer_timeout:g} s"
        else:
            self.writer_timeout = self.answer_timeout
            self.writer_limit = f"answer_timeout is {self.answer_timeout:g} s"
        self._open: dict[int, tuple[mmap.mmap, Marks]] = {}
        self.looks = Looks(BEAT_SECONDS)

    def marks(self, name: str, pid: int) -> Marks:
        """The marks of process ``pid`` (None until it made its file, or where it has none)."""
        opened = self._open.get(pid)
        if opened is None:
            try:
                fd = os.open(path(self.run_dir, name, pid), os.O_RDONLY)
            except OSError:
                return None
            try:
                if os.fstat(fd).st_size < _SIZE:  # still being made
                    return None
                mapped = mmap.mmap(fd, _SIZE, prot=mmap.PROT_READ)
            finally:
                os.close(fd)
            opened = self._open[pid] = (mapped, memoryview(mapped).cast("d"))
        return opened[1]

    def forget(self, pid: int) -> None:
        """Unmap the marks of a process that ended."""
        opened = self._open.pop(pid, None)
        if opened is not None:
            mapped, marks = opened
            marks.release()
            mapped.close()

    def verdict(self, name: str, pid: int, now: float | None = None) -> Verdict | None:
        """Whether process ``name`` (``pid``) is frozen, and how, or None (``now``: this look's
        time, from :meth:`Looks.look`)."""
        marks = self.marks(name, pid)
        if marks is None:
            return None
        now = time.monotonic() if now is None else now
        if name == WRITER:
            most, limit = self.writer_timeout, self.writer_limit
        else:
            most, limit = self.answer_timeout, f"answer_timeout is {self.answer_timeout:g} s"
        since = self.looks.since
        silent = since(marks[_BEAT], now)
        held, step = marks[_HELD], marks[_STEP]
        stuck = step and since(step, now) > self.answer_timeout
        if silent <= most and not stuck:
            return None
        state = procfs.state(pid)
        if state in ("T", "t"):
            return Verdict(
                "Stopped",
                f"{name} (pid {pid}) has been stopped for {silent:.1f} s (SIGSTOP, a job "
                f"scheduler or a debugger holds it; {limit})",
            )
        if silent > most and not (held and since(held, now) <= self.held_timeout):
            return Verdict(
                "Frozen",
                f"{name} (pid {pid}) showed no sign of life for {silent:.1f} s: its control "
                f"thread did not run (native code holding the GIL, or the machine is "
                f"overloaded; {limit})",
            )
        if stuck:
            return Verdict(
                "Stuck",
                f"{name} (pid {pid}) has worked on one step for {since(step, now):.1f} s without "
                f"finishing it (a plug-in call that does not return; answer_timeout is "
                f"{self.answer_timeout:g} s)",
            )
        return None


def kill(pid: int) -> None:
    """End a frozen process at once (SIGKILL also ends a stopped one)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
