"""The store writer's recording gaps (see :mod:`palaestra.core.recording_control`): opened
where a worker's recording paused, closed where it resumed."""

from __future__ import annotations

from palaestra.core.wire import messages as m
from palaestra.store.driver import Store


def mark_gap(store: Store, phase_id: int, mark: m.RecordingGapMark) -> None:
    """Open a gap where recording paused (unless one is open: another producer of the worker
    saw it first), or close the worker's open gap where it resumed."""
    open_gap = store.scalar(
        "SELECT id FROM recording_gaps WHERE experiment_run_phase_id = ? AND worker = ? "
        "AND to_episode IS NULL LIMIT 1",
        (phase_id, mark.worker),
    )
    if mark.paused and open_gap is None:
        store.insert(
            "recording_gaps",
            experiment_run_phase_id=phase_id,
            worker=mark.worker,
            from_episode=mark.episode,
            from_step=mark.step,
        )
    elif not mark.paused and open_gap is not None:
        store.execute(
            "UPDATE recording_gaps SET to_episode = ?, to_step = ? WHERE id = ?",
            (mark.episode, mark.step, open_gap),
        )
