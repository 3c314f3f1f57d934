"""A run instance made by replaying another names its source.

Revision ID: 0006_replay_sources
Revises: 0005_episodes_and_ends
Create Date: 2026-11-23

Adds the nullable column ``experiment_run_instances.source_instance_id``: for an instance that
``palaestra experiment-replay --record`` wrote, the id of the instance it replayed; None for an
instance a run made. A plain integer, no foreign key: deleting a run's instances
needs no order.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_replay_sources"
down_revision: str | None = "0005_episodes_and_ends"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``experiment_run_instances.source_instance_id``."""
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.add_column(sa.Column("source_instance_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop it again (SQLite rebuilds the table)."""
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.drop_column("source_instance_id")
