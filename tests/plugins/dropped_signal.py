"""A Brain whose module, when imported, receives the signal named by ``DROPPED_SIGNAL``
(``SIGINT`` or ``SIGTERM``) inside a ``__del__``: Python prints and drops the exception the
command's handler raises there, and the command must end as the signal says all the same."""

from __future__ import annotations

import os
import signal

from palaestra.agent import DummyBrain


class _Dropping:
    def __del__(self) -> None:
        name = os.environ.get("DROPPED_SIGNAL")
        if name:
            signal.raise_signal(signal.Signals[name])  # the handler runs here, in __del__


_Dropping()  # collected at once: its __del__ runs during this module's import


class DroppedSignalBrain(DummyBrain):
    """The dummy Brain; only its module's import matters."""
