"""Provenance of run instances and the per-step reward total of muscle actions.

Revision ID: 0002_provenance_and_reward
Revises: 0001_initial
Create Date: 2026-11-22

Adds ``experiment_run_instances.package_versions`` and ``.code_revision`` (unknown for old
instances) and ``muscle_actions.reward``, which is filled for existing rows with the sum of the
numeric values of their ``rewards`` (as the writer computes it for new rows), in batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0002_provenance_and_reward"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH_ROWS = 2000
"""Muscle actions read, and their rewards written, per round trip."""

MUSCLE_ACTIONS = sa.table(
    "muscle_actions",
    sa.column("id", sa.Integer()),
    sa.column("rewards", sa.JSON()),
    sa.column("reward", sa.Float()),
)


def upgrade() -> None:
    """Add the three columns, then fill ``muscle_actions.reward``."""
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.add_column(sa.Column("package_versions", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("code_revision", sa.String(64), nullable=True))
    with op.batch_alter_table("muscle_actions") as batch:
        batch.add_column(sa.Column("reward", sa.Float(), nullable=True))
    fill_rewards(op.get_bind())


def downgrade() -> None:
    """Drop the three columns (SQLite rebuilds both tables)."""
    with op.batch_alter_table("muscle_actions") as batch:
        batch.drop_column("reward")
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.drop_column("code_revision")
        batch.drop_column("package_versions")


def fill_rewards(connection: sa.Connection) -> None:
    """Set ``reward`` of every muscle action whose ``rewards`` hold a number."""
    statement = (
        sa.update(MUSCLE_ACTIONS)
        .where(MUSCLE_ACTIONS.c.id == sa.bindparam("row_id"))
        .values(reward=sa.bindparam("total"))
    )
    for rows in batches(connection):
        totals = [{"row_id": id_, "total": total(rewards)} for id_, rewards in rows]
        totals = [row for row in totals if row["total"] is not None]
        if totals:
            connection.execute(statement, totals)


def batches(connection: sa.Connection) -> Iterator[list[tuple[int, Any]]]:
    """``(id, rewards)`` of all muscle actions, ``BATCH_ROWS`` at a time, in id order."""
    last = 0
    while True:
        rows = connection.execute(
            sa.select(MUSCLE_ACTIONS.c.id, MUSCLE_ACTIONS.c.rewards)
            .where(MUSCLE_ACTIONS.c.id > last)
            .order_by(MUSCLE_ACTIONS.c.id)
            .limit(BATCH_ROWS)
        ).all()
        if not rows:
            return
        yield [(row.id, row.rewards) for row in rows]
        last = rows[-1].id


def total(rewards: Any) -> float | None:
    """The sum of the numeric values of a ``rewards`` object (nested lists summed too), or
    None if it holds no number. A frozen copy of what the writer computes for new rows."""
    if not isinstance(rewards, dict):
        return None
    found = False
    sum_ = 0.0
    stack: list[Any] = list(rewards.values())
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            sum_ += value
            found = True
    return sum_ if found else None
