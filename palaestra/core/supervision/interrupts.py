"""The command's record of SIGINT and SIGTERM: a signal is never lost.

Before a run's event loop runs, the command's handlers raise (``KeyboardInterrupt``, or
:class:`Terminated`) so that whatever it is doing unwinds. Python does not always let such an
exception through: it prints and drops one raised in a ``__del__`` or a weakref callback,
wraps one raised in ``__set_name__`` in a ``RuntimeError``, and asyncio logs and drops one
raised in a callback. And once the loop handles the signals, one whose wake-up byte the loop
has not read when the run ends is never dispatched. So every handler also records the signal
here, and the command looks at the record where it matters: before a run starts
(:func:`raise_if_received`), and when it exits (``palaestra.cli.entry``), which turns what
would have been exit 0 into 130 or 143.

The record belongs to the process that received the signal: a forked child starts without it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from palaestra.core.errors import EXIT_SIGINT, EXIT_SIGTERM

if TYPE_CHECKING:  # the command's entry imports this module first thing: no asyncio yet
    import asyncio
    from types import FrameType

SAID: dict[int, str] = {signal.SIGINT: "Interrupted.", signal.SIGTERM: "Terminated."}
"""What the command says when a signal ends it (its one line)."""

EXIT_CODES: dict[int, int] = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}

_received: int | None = None


class Terminated(BaseException):
    """SIGTERM outside a run (a run handles its own): unwinds like Ctrl-C (through click,
    which lets it pass), then exits 143."""


def received() -> int | None:
    """The first SIGINT or SIGTERM this process received, or None."""
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


def raising(signum: int, frame: FrameType | None) -> NoReturn:
    """The handler before the event loop: record, then unwind."""
    note(signum)
    raise_for(signum)


def raise_for(signum: int) -> NoReturn:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated


def raise_if_received() -> None:
    """Unwind now if a signal came whose exception Python dropped (see the module's text)."""
    if _received is not None:
        raise_for(_received)


def install() -> None:
    """The command's handlers, first thing: both signals recorded and raised."""
    signal.signal(signal.SIGINT, raising)
    signal.signal(signal.SIGTERM, raising)


def _recording(signum: int, frame: FrameType | None) -> None:
    note(signum)


def handle(loop: asyncio.AbstractEventLoop, signum: int, callback: Callable[[int], None]) -> None:
    """``loop.add_signal_handler(signum, callback, signum)``, the signal recorded as well the
    moment it comes (asyncio's own Python-level handler does nothing; its wake-up byte may be
    read too late)."""
    loop.add_signal_handler(signum, callback, signum)
    signal.signal(signum, _recording)  # (the wake-up fd, which the loop reads, stays set)


def restore(loop: asyncio.AbstractEventLoop, signum: int, previous: object) -> None:
    """Take ``signum`` back from ``loop`` and give it its handler from before (asyncio would
    leave the default, which kills silently or raises without a record)."""
    loop.remove_signal_handler(signum)
    if callable(previous) or previous in (signal.SIG_IGN, signal.SIG_DFL):
        signal.signal(signum, previous)  # type: ignore[arg-type]
