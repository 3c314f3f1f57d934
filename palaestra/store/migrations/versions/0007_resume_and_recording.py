"""Resumable instances and recording control: heartbeats, resume links, gaps, plug-in records.

Revision ID: 0007_resume_and_recording
Revises: 0006_replay_sources
Create Date: 2026-11-23

Adds to ``experiment_run_instances`` the nullable columns ``heartbeat_at`` (the executor's last
sign of life while the instance runs: an instance left ``running`` whose heartbeat is old is
stale) and ``resumed_from_id`` (for an instance made by ``experiment-resume``, the id of the
instance it continues; a plain integer like ``source_instance_id``). Adds the tables
``recording_gaps`` (steps of a phase's worker that ran while recording was paused: a replay
refuses to cross them) and ``plugin_records`` (what a plug-in recorded with
``context.record(key, value)`` at a step).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_resume_and_recording"
down_revision: str | None = "0006_replay_sources"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the instance columns and the two tables."""
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("resumed_from_id", sa.Integer(), nullable=True))
    op.create_table(
        "recording_gaps",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "experiment_run_phase_id",
            sa.Integer(),
            sa.ForeignKey("experiment_run_phases.id"),
            nullable=False,
        ),
        sa.Column("worker", sa.Integer(), nullable=False),
        sa.Column("from_episode", sa.Integer(), nullable=False),
        sa.Column("from_step", sa.Integer(), nullable=False),
        sa.Column("to_episode", sa.Integer(), nullable=True),
        sa.Column("to_step", sa.Integer(), nullable=True),
    )
    op.create_index(
        "ix_recording_gaps_phase_worker", "recording_gaps", ["experiment_run_phase_id", "worker"]
    )
    op.create_table(
        "plugin_records",
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
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.JSON(), nullable=True),
    )
    op.create_index(
        "ix_plugin_records_phase_step",
        "plugin_records",
        ["experiment_run_phase_id", "source", "worker", "episode", "step"],
    )


def downgrade() -> None:
    """Drop what :func:`upgrade` added (SQLite rebuilds the instances table)."""
    op.drop_index("ix_plugin_records_phase_step", table_name="plugin_records")
    op.drop_table("plugin_records")
    op.drop_index("ix_recording_gaps_phase_worker", table_name="recording_gaps")
    op.drop_table("recording_gaps")
    with op.batch_alter_table("experiment_run_instances") as batch:
        batch.drop_column("resumed_from_id")
        batch.drop_column("heartbeat_at")
