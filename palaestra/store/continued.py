"""Which instance continues an interrupted run instance: one only.

``experiment-resume`` records its instance with ``resumed_from_id`` naming the instance it
continues, and the run's view follows that chain back from the run's newest instance. Two
instances continuing one would both run and record the run twice (and the view would show one
of them), so the store writer claims the continued instance in the transaction that records
the new one (:func:`claim`): of two ``experiment-resume`` of one instance started at once (on
one machine or two), the one that commits first runs and the other is refused before it
records anything. The claim is a write of the continued instance's row before the check, so
that the database itself orders the claims: SQLite's writers take turns (``BEGIN
IMMEDIATE``), and on PostgreSQL the second claim's UPDATE waits for the first transaction, then
its check (a statement of its own, which sees what was committed before it began, at READ
COMMITTED, PostgreSQL's default) finds the first one's instance; at REPEATABLE READ or above the
second UPDATE fails as a serialization failure instead, and that run fails with exit 3.

This module is the store writer's (the database driver, no SQLAlchemy); ``experiment-resume``
asks the same before it starts anything (:func:`continuing`, :func:`already_resumed`).
"""

from __future__ import annotations

from palaestra.core.errors import NotResumableError
from palaestra.store.driver import Store

RESUMABLE = ("cancelled", "error", "stale")
"""The (shown) statuses of an instance that ``experiment-resume`` continues."""


def claim(store: Store, instance_id: int, run_uid: str) -> None:
    """Claim ``instance_id`` for the instance that this transaction of ``store`` records as
    continuing it (called first in that transaction, before the insert).

    Raises:
        NotResumableError: Another instance continues it already (it is running, or was
            resumed and ended), or the store no longer has it.
    """
    locked = store.execute(
        "UPDATE experiment_run_instances SET resumed_from_id = resumed_from_id WHERE id = ?",
        (instance_id,),
    )
    resumed = store.scalar("SELECT uid FROM experiment_run_instances WHERE id = ?", (instance_id,))
    if not locked.rowcount or resumed is None:
        raise NotResumableError(
            f"experiment-resume: the instance of run '{run_uid}' to resume (id {instance_id}) "
            "is no longer in the store (deleted meanwhile)"
        )
    found = continuing(store, instance_id)
    if found:
        raise NotResumableError(
            already_resumed(run_uid, resumed, [(uid, status) for _, uid, status in found])
        )


def continuing(store: Store, instance_id: int) -> list[tuple[int, str, str]]:
    """The instances that continue ``instance_id``: the one that resumed it, the one that
    resumed that one, and so on (of several, which a store written before this check may
    hold, the newest), each as its id, uid and recorded status; empty if none did."""
    found: list[tuple[int, str, str]] = []
    seen = {instance_id}
    while True:
        row = store.execute(
            "SELECT id, uid, status FROM experiment_run_instances WHERE resumed_from_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (instance_id,),
        ).fetchone()
        if row is None or row[0] in seen:
            return found
        instance_id = int(row[0])
        seen.add(instance_id)
        found.append((instance_id, str(row[1]), str(row[2])))


def already_resumed(run_uid: str, instance_uid: str, continued: list[tuple[str, str]]) -> str:
    """Why instance ``instance_uid`` of ``run_uid`` is not resumed again: ``continued`` are
    the instances that continue it (uid, status), the one that resumed it first and the
    newest last (:func:`continuing`)."""
    (first, status), (newest, newest_status) = continued[0], continued[-1]
    if status in ("running", "stopped"):
        said = f"is being resumed already, by instance {first} ({status})"
    else:
        said = f"was resumed already, by instance {first} ({status})"
    text = (
        f"experiment-resume: instance {instance_uid} of run '{run_uid}' {said}; an instance "
        "is continued by one instance only (two would record the run twice)"
    )
    if newest != first:
        text += f"; the newest instance continuing it is {newest} ({newest_status})"
    if newest_status in RESUMABLE:
        that = "that one" if newest != first else "it"
        text += f": resume {that} with 'palaestra experiment-resume {run_uid} --instance {newest}'"
    return text
