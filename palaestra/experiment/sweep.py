"""Running many checked runs on this machine, N at a time, each in its own executor process.

A run that fails does not stop the others. Ctrl-C (or SIGTERM) is passed on to the runs that
are executing, which stop cleanly and are marked cancelled; no further run starts, and those
that never started come back as cancelled with the reason. Several executors share one
store: SQLite serialises their writes (WAL, a busy timeout), and the writer retries a run start
that raced another for the same experiment.
"""

from __future__ import annotations

import multiprocessing.connection
import signal
from collections import deque
from collections.abc import Callable, Sequence

from palaestra.core.errors import InvalidInputError
from palaestra.core.specs import RunSpec
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
        BaseException: Whatever interrupted the sweep other than Ctrl-C (SIGTERM's exception,
            an error starting a process), once the runs already executing have stopped.
    """
    if parallel < 1:
        raise InvalidInputError(f"parallel must be 1 or more, got {parallel}.")
    return _Sweep(runs, config, parallel, on_end).run()


class _Sweep:
    """The runs waiting, executing and ended, and what stopped the sweep if anything did."""

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
        self.executing: dict[int, tuple[int, ExecutorProcess]] = {}
        self.outcomes: list[RunOutcome | None] = [None] * len(runs)
        self.stopped_by: BaseException | None = None

    def run(self) -> list[RunOutcome]:
        while self.waiting or self.executing:
            try:
                self._start_more()
                self._collect()
            except BaseException as exc:  # noqa: BLE001 - re-raised below once all have ended
                self._stop(exc)
        if self.stopped_by is not None and not isinstance(self.stopped_by, KeyboardInterrupt):
            raise self.stopped_by
        return [outcome for outcome in self.outcomes if outcome is not None]

    def _start_more(self) -> None:
        while self.waiting and len(self.executing) < self.parallel and self.stopped_by is None:
            index, spec = self.waiting.popleft()
            child = ExecutorProcess(spec, self.config)
            self.executing[child.sentinel] = (index, child)

    def _collect(self) -> None:
        for sentinel in multiprocessing.connection.wait(list(self.executing)):
            assert isinstance(sentinel, int)  # waited on fds only
            index, child = self.executing.pop(sentinel)
            outcome = child.outcome()
            self.outcomes[index] = outcome
            if self.on_end is not None:
                self.on_end(index, outcome)

    def _stop(self, exc: BaseException) -> None:
        """Pass the interruption on to the executing runs; the waiting ones never start."""
        self.stopped_by = self.stopped_by or exc
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
        for _, child in self.executing.values():
            child.interrupt(signum)
        while self.waiting:
            index, spec = self.waiting.popleft()
            reason = "not started: the sweep was interrupted"
            self.outcomes[index] = RunOutcome(spec.uid, "", 128 + signum, reason)
            if self.on_end is not None:
                self.on_end(index, self.outcomes[index])  # type: ignore[arg-type]
