"""Signal handlers belong to a process's main thread: say so where a plug-in tries otherwise.

palaestra runs the per-step methods of Brains, Muscles and Environments in a worker thread of
their process (:mod:`palaestra.core.supervision.hotloop`); Python refuses ``signal.signal`` there
with a bare ``ValueError: signal only works in main thread``. In palaestra's processes,
``signal.signal`` called off the main thread raises :class:`SignalOffMainThread` instead (a
``ValueError`` still), which says why and what to do; on the main thread it is unchanged.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_original = signal.signal


class SignalOffMainThread(ValueError):
    """``signal.signal`` was called in a worker thread of a palaestra process."""


def guard_signal_calls(process: str) -> None:
    """Make ``signal.signal`` off the main thread of this process raise a clear error."""

    def signal_in_main_thread_only(signalnum: Any, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return _original(signalnum, handler)
        try:
            name = signal.Signals(signalnum).name
        except ValueError:
            name = str(signalnum)
        raise SignalOffMainThread(
            f"signal.signal({name}, ...) called in thread "
            f"'{threading.current_thread().name}' of {process}: palaestra runs the per-step "
            "methods of Brains, Muscles and Environments in a worker thread, where Python "
            "allows no signal handlers. Install them in the plug-in's constructor (or a "
            "Brain's or Muscle's setup()), which run on the main thread, or leave signals to "
            "palaestra: it ends every process on SIGTERM and the run on Ctrl-C."
        )

    signal.signal = signal_in_main_thread_only
