"""Brain and Muscle statistics, and the simulation time of world states.

Revision ID: 0004_statistics_and_simtime
Revises: 0003_bigint_seeds
Create Date: 2026-11-23

Adds the table ``statistics`` (what a Brain or a Muscle recorded with ``add_statistics``, one
row per source, worker, episode and step that had any) and the nullable JSON column
``world_states.simtime`` (an environment's simulation time; None for old rows and for
environments that report none).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_statistics_and_simtime"
down_revision: str | None = "0003_bigint_seeds"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``statistics`` and add ``world_states.simtime``."""
    op.create_table(
        "statistics",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("agent_id", sa.Integer(), sa.ForeignKey("agents.id"), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("worker", sa.Integer(), nullable=False),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("statistics", sa.JSON(), nullable=False),
    )
    op.create_index(
        "ix_statistics_agent_step",
        "statistics",
        ["agent_id", "source", "worker", "episode", "step"],
    )
    with op.batch_alter_table("world_states") as batch:
        batch.add_column(sa.Column("simtime", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop ``world_states.simtime`` (SQLite rebuilds the table) and ``statistics``."""
    with op.batch_alter_table("world_states") as batch:
        batch.drop_column("simtime")
    op.drop_index("ix_statistics_agent_step", table_name="statistics")
    op.drop_table("statistics")
