"""Running many checked runs on this machine, N at a time, each in its own executor process.

A run that fails does not stop the others. Ctrl-C (or SIGTERM) is passed on to the runs that
are executing, which stop cleanly and are marked cancelled; no further run starts, and those
that never started come back as cancelled with the reason. Several executors share one
store: SQLite serialises their writes (WAL, a busy timeout), and the writer retries a run start
that raced another for the same experiment.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import InvalidInputError
from palaestra.core.supervision import interrupts
from palaestra.core.supervision.affinity import Affinity, share
from palaestra.experiment.executor import RunOutcome
from palaestra.experiment.isolated import ExecutorProcess
from palaestra.experiment.runtime_config import RuntimeConfig

__all__ = ["OnEnd", "run_all"]

OnEnd = Callable[[int, RunOutcome], None]
"""Called in this process as each run ends, with its index in the list and its outcome."""


def run_all(
    runs: Sequence[RunSpec],
    config: RuntimeConfig,
    *,
    parallel: int = 1,
    on_end: OnEnd | None = None,
) -> list[RunOutcome]:
    """Execute ``runs``, at most ``parallel`` at once, and return their outcomes in order.

    Raises:
        InvalidInputError: ``parallel`` is below 1.
        BaseException: An error starting a process, once the runs already executing have
            stopped. SIGTERM stops them too, and is then raised again with the caller's own
            handler in place (the command line exits 143).
    """
    if parallel < 1:
        raise InvalidInputError(f"parallel must be 1 or more, got {parallel}.")
    return _Sweep(runs, config, parallel, on_end).run()


class _Sweep:
    """The runs waiting, executing and ended, and the signals that stopped the sweep."""

    def __init__(
        self,
        runs: Sequence[RunSpec],
        config: RuntimeConfig,
        parallel: int,
        on_end: OnEnd | None,
    ) -> None:
        self.config = config
        self.parallel = parallel
        self.on_end = on_end
        self.waiting = deque(enumerate(runs))
        self.executing: dict[int, tuple[int, ExecutorProcess, int]] = {}  # and its slot
        self.slots = list(range(parallel))  # free; each run at once has one (its CPUs)
        self.outcomes: list[RunOutcome | None] = [None] * len(runs)
        self.stopping = False
        self.failure: BaseException | None = None
        self.signals: list[int] = []
        self._handled = 0
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    def run(self) -> list[RunOutcome]:
        previous = self._catch_signals()
        try:
            while self.waiting or self.executing:
                try:
                    self._start_more()
                    self._collect()
                except BaseException as exc:  # noqa: BLE001 - re-raised below once all ended
                    self.failure = self.failure or exc
                    interrupted = isinstance(exc, KeyboardInterrupt)  # off the main thread
                    self._stop(signal.SIGINT if interrupted else signal.SIGTERM)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(self._wake_read)
            os.close(self._wake_write)
        if self.failure is not None and not isinstance(self.failure, KeyboardInterrupt):
            raise self.failure
        if signal.SIGTERM in self.signals:  # the runs have stopped: now the caller's own way
            signal.raise_signal(signal.SIGTERM)
        return [outcome for outcome in self.outcomes if outcome is not None]

    def _catch_signals(self) -> dict[int, Any]:
        """On the main thread, turn SIGINT and SIGTERM into wake-ups of the wait: an exception
        raised at an arbitrary point (a fork's bookkeeping, say) could be lost."""
        if threading.current_thread() is not threading.main_thread():
            return {}

        def caught(signum: int, frame: object) -> None:
            interrupts.note(signum)  # the command ends as the signal says, whatever the runs did
            self.signals.append(signum)
            with contextlib.suppress(BlockingIOError):  # a wake-up is pending already
                os.write(self._wake_write, b"\0")

        return {signum: signal.signal(signum, caught) for signum in interrupts.handled()}

    def _start_more(self) -> None:
        while self.waiting and len(self.executing) < self.parallel and not self.stopping:
            index, spec = self.waiting.popleft()
            slot = self.slots.pop(0)
            cpus: tuple[int, ...] = ()
            if self.config.cpu_affinity == "worker" and self.parallel > 1:
                cpus = share(Affinity.of_this_process().cpus, slot, self.parallel)
            child = ExecutorProcess(spec, self.config, cpus)
            self.executing[child.sentinel] = (index, child, slot)

    def _collect(self) -> None:
        for ready in multiprocessing.connection.wait([*self.executing, self._wake_read]):
            assert isinstance(ready, int)  # waited on fds only
            if ready == self._wake_read:
                os.read(self._wake_read, 64)
                while self._handled < len(self.signals):
                    self._stop(self.signals[self._handled])
                    self._handled += 1
                continue
            index, child, slot = self.executing.pop(ready)
            self.slots.append(slot)
            self._ended(index, child.outcome())

    def _ended(self, index: int, outcome: RunOutcome) -> None:
        self.outcomes[index] = outcome
        if self.on_end is not None:
            self.on_end(index, outcome)

    def _stop(self, signum: int) -> None:
        """Pass a signal on to the executing runs (a second one stops them at once); the
        waiting ones never start."""
        self.stopping = True
        for _, child, _ in self.executing.values():
            child.interrupt(signum)
        while self.waiting:
            index, spec = self.waiting.popleft()
            reason = "not started: the sweep was interrupted"
            self._ended(index, RunOutcome(spec.uid, "", 128 + signum, reason))
