"""Where a worker's ended episodes go: the store's ``episodes`` rows and the run's progress (the
ExperimentRun controller, in the executor), each in batches (see :data:`PROGRESS_SECONDS` and
:data:`EPISODE_FLUSH_SECONDS`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import RowSink, connect_store, episode_values

PROGRESS_SECONDS = 0.1
"""A worker's ended episodes go to the ExperimentRun controller (the run's progress, in the
executor) in batches (an :class:`~palaestra.core.wire.messages.EpisodeRows`): the first episode's
at once, then at the first episode end at least this long after the last batch, and the rest
before the worker reports it is done. One message per episode kept the executor's one process
busy in proportion to workers x episodes/s; the progress display redraws at most every 0.1 s
anyway (``palaestra.cli.progress.REFRESH_S``)."""
EPISODE_FLUSH_SECONDS = 1.0
"""The ``episodes`` rows buffered go to the store writer at the first episode's end, then at the
first episode end at least this long after the last push (and in batches, and at the phase's
end): an executor killed mid-phase leaves the store knowing the episodes completed until about a
second before (see :mod:`palaestra.store.completed` for when such an episode counts as
completed)."""


class EpisodeReport:
    """The ended episodes of phase ``phase`` (its store id ``phase_id``) of one worker; ``store``:
    the store writer's endpoint (None: no store)."""

    __slots__ = (
        "phase",
        "phase_id",
        "store",
        "steps",
        "rows",
        "pushed",
        "pending",
        "told",
        "tell",
    )

    def __init__(self, phase: int, phase_id: int, store: str | None = None) -> None:
        self.phase = phase
        self.phase_id = phase_id
        self.store = store
        self.steps = 0  # of the episodes that ended
        self.rows = RowSink(None, "episodes", shape=self._shape)  # the store's once running
        self.pushed = -EPISODE_FLUSH_SECONDS  # the first episode's row goes at once
        self.pending: list[m.EpisodeEnded] = []  # ended episodes not yet told the parent
        self.told = -PROGRESS_SECONDS  # the first episode is told at once
        self.tell: Callable[[m.Msg], object] | None = None  # (set by connect)

    def connect(self, hot: HotLoop, tell: Callable[[m.Msg], object]) -> None:
        """Send the rows to the store from ``hot``'s thread (if there is a store) and the
        parent's batches with ``tell``."""
        self.rows = RowSink(connect_store(hot, self.store), "episodes", shape=self._shape)
        self.tell = tell

    def ended(self, message: m.EpisodeEnded) -> None:
        """An episode ended: its row, and its part of the parent's next batch."""
        self.steps += message.steps
        self.rows.add(message)
        now = time.monotonic()
        if now - self.pushed >= EPISODE_FLUSH_SECONDS:
            self.rows.flush()
            self.pushed = now
        self.pending.append(message)
        if now - self.told >= PROGRESS_SECONDS:
            self.tell_parent(now)

    def tell_parent(self, now: float) -> None:
        """Send the parent the episodes that ended since the last batch (if any)."""
        if not self.pending:
            return
        if self.tell is None:  # (episodes end only once connected)
            raise RuntimeError("episodes ended before the report was connected")
        rows, self.pending = self.pending, []
        self.told = now
        self.tell(m.EpisodeRows(phase_id=self.phase_id, rows=rows))

    def _shape(self, row: m.EpisodeEnded) -> tuple[Any, ...]:
        return episode_values(self.phase_id, row)
