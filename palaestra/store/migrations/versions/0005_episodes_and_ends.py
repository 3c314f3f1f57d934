"""Episodes with their times, terminated and truncated kept apart, and a run's overrides.

Revision ID: 0005_episodes_and_ends
Revises: 0004_statistics_and_simtime
Create Date: 2026-11-23

Adds the table ``episodes`` (one row per phase, worker and episode: when it started and ended,
how many steps it had, how it ended and each agent's episode reward), the nullable columns
``terminated`` and ``truncated`` of ``world_states`` and ``muscle_actions`` (gymnasium's two ways
an episode ends; ``done`` stays their "or"; None for old rows) and the nullable JSON column
``experiment_runs.overrides`` (the ``--set``/``--seeds`` values a sweep derived the run from;
None for a run started as written).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_episodes_and_ends"
down_revision: str | None = "0004_statistics_and_simtime"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENDS = ("world_states", "muscle_actions")


def upgrade() -> None:
    """Create ``episodes``; add the ends and the overrides."""
    op.create_table(
        "episodes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "experiment_run_phase_id",
            sa.Integer(),
            sa.ForeignKey("experiment_run_phases.id"),
            nullable=False,
        ),
        sa.Column("worker", sa.Integer(), nullable=False),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("terminated", sa.Boolean(), nullable=True),
        sa.Column("truncated", sa.Boolean(), nullable=True),
        sa.Column("rewards", sa.JSON(), nullable=False),
    )
    op.create_index(
        "ix_episodes_phase_worker_episode",
        "episodes",
        ["experiment_run_phase_id", "worker", "episode"],
    )
    for table in ENDS:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("terminated", sa.Boolean(), nullable=True))
            batch.add_column(sa.Column("truncated", sa.Boolean(), nullable=True))
    with op.batch_alter_table("experiment_runs") as batch:
        batch.add_column(sa.Column("overrides", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop what :func:`upgrade` added (SQLite rebuilds the altered tables)."""
    with op.batch_alter_table("experiment_runs") as batch:
        batch.drop_column("overrides")
    for table in ENDS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("truncated")
            batch.drop_column("terminated")
    op.drop_index("ix_episodes_phase_worker_episode", table_name="episodes")
    op.drop_table("episodes")
