"""The store writer's recording gaps (see :mod:`palaestra.core.recording_control`): opened
where a worker's recording paused, closed where it resumed."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from palaestra.core.wire import messages as m
from palaestra.store.tables import recording_gaps as gaps


def mark_gap(connection: Connection, phase_id: int, mark: m.RecordingGapMark) -> None:
    """Open a gap where recording paused (unless one is open: another producer of the worker
    saw it first), or close the worker's open gap where it resumed."""
    of_worker = (
        gaps.c.experiment_run_phase_id == phase_id,
        gaps.c.worker == mark.worker,
        gaps.c.to_episode.is_(None),
    )
    open_gap = connection.scalar(select(gaps.c.id).where(*of_worker).limit(1))
    if mark.paused and open_gap is None:
        connection.execute(
            gaps.insert(),
            [
                {
                    "experiment_run_phase_id": phase_id,
                    "worker": mark.worker,
                    "from_episode": mark.episode,
                    "from_step": mark.step,
                }
            ],
        )
    elif not mark.paused and open_gap is not None:
        connection.execute(
            update(gaps)
            .where(gaps.c.id == open_gap)
            .values(to_episode=mark.episode, to_step=mark.step)
        )
