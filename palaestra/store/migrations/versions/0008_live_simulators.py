"""Live simulators: step timing and code reloads.

Revision ID: 0008_live_simulators
Revises: 0007_resume_and_recording
Create Date: 2026-11-23

Adds the nullable columns ``world_states.late_by`` (with ``phase_config.step_rate``: how many
seconds after its due time the step began; None in a lockstep phase and in old rows) and
``muscle_actions.stale_policy`` (with ``update_lag: async``: True when the Muscle acted before
its Brain's answer to an earlier step had arrived; None where updates are not asynchronous),
and the table ``code_reloads`` (each change of a plug-in's source file a process saw with hot
reload on, and whether the reload took: the new code's first step, or the error that kept the
old code running).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_live_simulators"
down_revision: str | None = "0007_resume_and_recording"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the two step columns and the reloads table."""
    with op.batch_alter_table("world_states") as batch:
        batch.add_column(sa.Column("late_by", sa.Float(), nullable=True))
    with op.batch_alter_table("muscle_actions") as batch:
        batch.add_column(sa.Column("stale_policy", sa.Boolean(), nullable=True))
    op.create_table(
        "code_reloads",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "experiment_run_phase_id",
            sa.Integer(),
            sa.ForeignKey("experiment_run_phases.id"),
            nullable=False,
        ),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("worker", sa.Integer(), nullable=False),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("module", sa.String(255), nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_code_reloads_phase", "code_reloads", ["experiment_run_phase_id", "source", "worker"]
    )


def downgrade() -> None:
    """Drop what :func:`upgrade` added (SQLite rebuilds the two step tables)."""
    op.drop_index("ix_code_reloads_phase", table_name="code_reloads")
    op.drop_table("code_reloads")
    with op.batch_alter_table("muscle_actions") as batch:
        batch.drop_column("stale_policy")
    with op.batch_alter_table("world_states") as batch:
        batch.drop_column("late_by")
