"""Recording how a run ended straight into the store, for when its writer is gone."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update
from sqlalchemy.orm import Session

from palaestra.store.engine import make_engine
from palaestra.store.models import ExperimentRunInstance, ExperimentRunPhase, utcnow


def mark_run_end(
    session: Session, instance: ExperimentRunInstance, status: str, reason: str, now: dt.datetime
) -> None:
    """Set the instance's status, reason and end (``now``), and end its running phases."""
    instance.status = status
    instance.reason = reason
    instance.finished_at = now
    session.execute(
        update(ExperimentRunPhase)
        .where(
            ExperimentRunPhase.experiment_run_instance_id == instance.id,
            ExperimentRunPhase.status == "running",
        )
        .values(status=status, finished_at=now)
    )


def record_run_end(store_uri: str, instance_uid: str, status: str, reason: str) -> bool:
    """Mark the run instance ``instance_uid`` ended; False if the store does not know it."""
    engine = make_engine(store_uri)
    try:
        with Session(engine) as session, session.begin():
            instance = (
                session.query(ExperimentRunInstance).filter_by(uid=instance_uid).one_or_none()
            )
            if instance is None:
                return False
            mark_run_end(session, instance, status, reason, utcnow())
        return True
    finally:
        engine.dispose()
