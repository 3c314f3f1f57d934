"""Signal handlers belong to a process's main thread: say so where a plug-in tries otherwise.

palaestra runs the per-step methods of Brains, Muscles and Environments in a worker thread of
their process (:mod:`palaestra.core.supervision.hotloop`); Python refuses ``signal.signal`` there
with a bare ``ValueError: signal only works in main thread``. In palaestra's processes,
``signal.signal`` called off the main thread raises :class:`SignalOffMainThread` instead (a
``ValueError`` still), which says why and what to do; on the main thread it is unchanged, but
for Ctrl-C and SIGHUP (:data:`~palaestra.core.supervision.interrupts.TERMINAL`): the terminal
sends them to every process of the run, and the executor alone stops the run on them. A
handler a plug-in (or a library it uses) asks for there, Python's ``default_int_handler`` say,
would end its process with a ``KeyboardInterrupt`` and lose the rows it produced; they stay
ignored instead, with a warning.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from palaestra.core.supervision.interrupts import TERMINAL

LOG = logging.getLogger(__name__)

_original = signal.signal


class SignalOffMainThread(ValueError):
    """``signal.signal`` was called in a worker thread of a palaestra process."""


def _name(signalnum: Any) -> str:
    try:
        return signal.Signals(signalnum).name
    except ValueError:
        return str(signalnum)


def guard_signal_calls(process: str) -> None:
    """Make ``signal.signal`` off the main thread of this process raise a clear error, and
    leave Ctrl-C and SIGHUP ignored (the executor's to handle) whoever asks for a handler."""
    warned: set[int] = set()

    def signal_in_main_thread_only(signalnum: Any, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            if signalnum in TERMINAL and handler != signal.SIG_IGN:
                return _left_ignored(process, signalnum, warned)
            return _original(signalnum, handler)
        raise SignalOffMainThread(
            f"signal.signal({_name(signalnum)}, ...) called in thread "
            f"'{threading.current_thread().name}' of {process}: palaestra runs the per-step "
            "methods of Brains, Muscles and Environments in a worker thread, where Python "
            "allows no signal handlers. Install them in the plug-in's constructor (or a "
            "Brain's or Muscle's setup()), which run on the main thread, or leave signals to "
            "palaestra: it ends every process on SIGTERM and the run on Ctrl-C."
        )

    signal.signal = signal_in_main_thread_only


def _left_ignored(process: str, signalnum: Any, warned: set[int]) -> Any:
    """Keep ``signalnum`` (SIGINT or SIGHUP) ignored, saying so once; returns its handler, as
    ``signal.signal`` returns the one it replaces."""
    if int(signalnum) not in warned:
        warned.add(int(signalnum))
        name = _name(signalnum)
        LOG.warning(
            "%s: signal.signal(%s, ...) left %s ignored: in a run's processes Ctrl-C and a "
            "closed terminal (SIGINT, SIGHUP) are the executor's, which stops the run in order "
            "(the rows produced are stored, each Brain dumps, every plug-in's teardown() "
            "runs); do in teardown() what the handler would do",
            process,
            name,
            name,
        )
    return signal.getsignal(signalnum)
