"""The command's record of SIGINT, SIGTERM and SIGHUP: a signal is never lost.

SIGHUP (the terminal closed) ends a run as Ctrl-C does: it is stopped cleanly and marked
cancelled, and ``experiment-resume`` continues it. A command started with SIGHUP ignored
(``nohup``) runs on.

Before a run's event loop runs, the handlers raise (``KeyboardInterrupt``, or
:class:`Terminated`) so that whatever it is doing unwinds. Python does not always let such an
exception through (it drops one raised in a ``__del__``, a weakref callback or an asyncio
callback), and once the loop handles the signals, one whose wake-up byte is unread when the run
ends is never dispatched. So every handler also records the signal here, and the command looks
at the record before a run starts (:func:`raise_if_received`) and when it exits
(``palaestra.cli.entry``), which turns what would have been exit 0 into 130, 143 or 129.

The record belongs to the process that received the signal: a forked child starts without it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, NoReturn

from palaestra.core.errors import EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGTERM

if TYPE_CHECKING:  # the command's entry imports this module first thing: no asyncio yet
    import asyncio
    from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

LINES: dict[int, str] = {
    signal.SIGINT: "Interrupted.",
    signal.SIGTERM: "Terminated.",
    signal.SIGHUP: "Hung up.",
}
"""What the command says when a signal ends it (its one line)."""

EXIT_CODES: dict[int, int] = {
    signal.SIGINT: EXIT_SIGINT,
    signal.SIGTERM: EXIT_SIGTERM,
    signal.SIGHUP: EXIT_SIGHUP,
}
"""The command's exit code when a signal ends it."""

TERMINAL = (signal.SIGINT, signal.SIGHUP)
"""What a terminal sends to the whole foreground process group (Ctrl-C, its closing): a run's
processes leave both to the executor, which stops the run in order."""

_received: int | None = None


class Terminated(BaseException):
    """SIGTERM or SIGHUP outside a run (a run handles its own): unwinds like Ctrl-C (through
    click, which lets it pass), then exits 143 or 129."""


def handled() -> tuple[int, ...]:
    """The signals of :data:`SIGNALS` a run or a sweep stops on: not SIGHUP where the command
    was started with it ignored (``nohup``: it runs on when the terminal closes)."""
    ignored = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    return tuple(s for s in SIGNALS if not (s == signal.SIGHUP and ignored))


def leave_to_executor() -> None:
    """In a process of a run: ignore :data:`TERMINAL` (the executor stops the run). A plug-in's
    subprocess inherits it, as under ``nohup``. One held back while the process started
    (:func:`held_from_fresh_child`) is dropped so."""
    for signum in TERMINAL:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINAL)


@contextlib.contextmanager
def held_from_fresh_child() -> Iterator[None]:
    """Around the start of a fresh interpreter (the spawn and forkserver start methods): hold
    :data:`TERMINAL` back in this thread, so that the child starts with them blocked (an exec
    keeps the signal mask; the fork server, started then, passes its own on) until it ignores
    them (:func:`leave_to_executor`). A new interpreter raises ``KeyboardInterrupt`` on Ctrl-C
    until then (a second or so: its imports), and the terminal's Ctrl-C reaches every process of
    the run: a traceback of a child that died starting. One that comes meanwhile reaches this
    process when the mask is restored."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # (before: its first start unblocks SIGINT, SIGTERM here)
    kept = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, kept)


def received() -> int | None:
    """The first of :data:`SIGNALS` this process received, or None."""
    return _received


def note(signum: int) -> None:
    """Record ``signum`` unless a signal was recorded already."""
    global _received
    if _received is None:
        _received = signum


def _forget() -> None:
    global _received
    _received = None


os.register_at_fork(after_in_child=_forget)


@contextlib.contextmanager
def forgotten_after() -> Iterator[None]:
    """Around a call of the Python API (``palaestra.run``, ``palaestra.sweep``): it passes the
    signals that come on to its runs, whose results then say ``cancelled``, so what it recorded
    is forgotten as it returns. The caller's process lives on (a notebook's kernel); kept, the
    record refused its every later run at once (a ``KeyboardInterrupt`` as the run file was
    checked). A record made before the call stays."""
    global _received
    before = _received
    try:
        yield
    finally:
        _received = before


def raising(signum: int, frame: FrameType | None) -> NoReturn:
    """The handler before the event loop: record, then unwind."""
    note(signum)
    raise_for(signum)


def raise_for(signum: int) -> NoReturn:
    """Raise what ``signum`` raises in the command: ``KeyboardInterrupt`` for SIGINT,
    :class:`Terminated` for SIGTERM and SIGHUP."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated


def raise_if_received() -> None:
    """Unwind now if a signal came whose exception Python dropped (see the module's text)."""
    if _received is not None:
        raise_for(_received)


def recording(signum: int, frame: FrameType | None) -> None:
    """A handler that only records (the command's exit: nothing is left to unwind)."""
    note(signum)


def install(handler: Callable[[int, FrameType | None], None] = raising) -> None:
    """``handler`` for each of :data:`SIGNALS`: the command's, first thing, records and
    raises. A signal the command was started with ignored (SIGINT of a shell script's
    background job, SIGHUP under ``nohup``) stays so."""
    for signum in SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, handler)


@contextlib.contextmanager
def _held() -> Iterator[None]:
    """The signals held back from this thread while their handlers change (one that comes
    meanwhile is delivered to the new handler after): between asyncio's calls and ours, a
    signal would find a handler that does not record it, or the default, which kills."""
    kept = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, kept)


def add_handler(
    loop: asyncio.AbstractEventLoop, signum: int, callback: Callable[[int], None]
) -> None:
    """``loop.add_signal_handler(signum, callback, signum)``, the signal also recorded the
    moment it comes: asyncio's own Python-level handler does nothing, and the loop may read
    its wake-up byte too late. The wake-up fd, which the loop reads, stays set, and so does
    ``SA_RESTART`` (a system call a signal interrupts is restarted, as asyncio has it)."""
    with _held():
        loop.add_signal_handler(signum, callback, signum)
        signal.signal(signum, recording)
        signal.siginterrupt(signum, False)


def restore(loop: asyncio.AbstractEventLoop, previous: Mapping[signal.Signals, object]) -> None:
    """Take the signals of ``previous`` back from ``loop`` and give each the handler it maps
    to (what ``signal.getsignal`` gave before :func:`add_handler`); asyncio alone would leave
    the default, which kills without a word, or raises without a record. A handler that was
    not Python's (None: a C library's) cannot be put back: asyncio's default stays."""
    with _held():
        for signum, handler in previous.items():
            loop.remove_signal_handler(signum)
            if handler is not None:
                signal.signal(signum, handler)  # type: ignore[arg-type]
