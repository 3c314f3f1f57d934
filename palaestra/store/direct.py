"""Recording how a run ended straight into the store, for when its writer is gone."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Connection, select, update

from palaestra.store.engine import make_engine
from palaestra.store.tables import experiment_run_instances as instances
from palaestra.store.tables import experiment_run_phases as phases
from palaestra.store.tables import utcnow


def mark_run_end(
    connection: Connection, instance_id: int, status: str, reason: str, now: dt.datetime
) -> bool:
    """Set the instance's status, reason and end (``now``), and end its running phases;
    False if the store has no such instance."""
    ended = connection.execute(
        update(instances)
        .where(instances.c.id == instance_id)
        .values(status=status, reason=reason, finished_at=now)
    )
    connection.execute(
        update(phases)
        .where(phases.c.experiment_run_instance_id == instance_id, phases.c.status == "running")
        .values(status=status, finished_at=now)
    )
    return bool(ended.rowcount)


def record_run_end(store_uri: str, instance_uid: str, status: str, reason: str) -> bool:
    """Mark the run instance ``instance_uid`` ended; False if the store does not know it."""
    engine = make_engine(store_uri)
    try:
        with engine.begin() as connection:
            found = connection.scalar(
                select(instances.c.id).where(instances.c.uid == instance_uid)
            )
            return found is not None and mark_run_end(connection, found, status, reason, utcnow())
    finally:
        engine.dispose()
