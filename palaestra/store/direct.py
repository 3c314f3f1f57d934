"""Recording how a run ended straight into the store, for when its writer is gone."""

from __future__ import annotations

import datetime as dt

from palaestra.core.description.name_rules import stored_reason
from palaestra.core.errors import StoreError
from palaestra.store.driver import Store, utcnow


def mark_run_end(
    store: Store, instance_id: int, status: str, reason: str, now: dt.datetime
) -> bool:
    """Set the instance's status, reason and end (``now``), and end its running phases; False
    if the store has no such instance. The reason is kept as
    :func:`~palaestra.core.description.name_rules.stored_reason` keeps it: a long one (a
    plug-in's exception text may be of any size) as its head and tail, a NUL character (which
    PostgreSQL refuses) as ``\\x00``."""
    now = store.time(now)
    ended = store.execute(
        "UPDATE experiment_run_instances SET status = ?, reason = ?, finished_at = ? WHERE id = ?",
        (status, stored_reason(reason), now, instance_id),
    )
    store.execute(
        "UPDATE experiment_run_phases SET status = ?, finished_at = ? "
        "WHERE experiment_run_instance_id = ? AND status = 'running'",
        (status, now, instance_id),
    )
    return bool(ended.rowcount)


def record_run_end(store_uri: str, instance_uid: str, status: str, reason: str) -> bool:
    """Mark the run instance ``instance_uid`` ended; False if the store does not know it.

    Raises:
        StoreError: The store cannot be opened or written.
    """
    store = Store(store_uri)
    try:
        with store.transaction():
            found = store.scalar(
                "SELECT id FROM experiment_run_instances WHERE uid = ?", (instance_uid,)
            )
            return found is not None and mark_run_end(store, found, status, reason, utcnow())
    except store.errors.Error as exc:
        raise StoreError(
            f"store {store.shown}: recording the end of the run failed: {exc}"
        ) from exc
    finally:
        store.close()
