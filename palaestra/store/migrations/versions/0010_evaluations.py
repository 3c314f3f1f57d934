"""Evaluation results: what each agent's Brain returned after an evaluation rollout.

Revision ID: 0010_evaluations
Revises: 0009_unbounded_paths
Create Date: 2026-12-08

Adds the table ``evaluations``: one row per agent and evaluation of a phase with
``phase_config.evaluate_every`` (the metrics its Brain's ``evaluate_rollouts`` returned, the
evaluation's index, the training episodes before it, the rollout it judged, the checkpoint the
result names). ``experiment-resume`` reads them to tell a resumed phase's termination
conditions the results of the evaluations completed before the cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_evaluations"
down_revision: str | None = "0009_unbounded_paths"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the table ``evaluations``."""
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("agent_id", sa.Integer(), sa.ForeignKey("agents.id"), nullable=False),
        sa.Column("evaluation", sa.Integer(), nullable=False),
        sa.Column("training_episodes", sa.Integer(), nullable=False),
        sa.Column("worker", sa.Integer(), nullable=False),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("checkpoint_id", sa.Text(), nullable=True),
        sa.Column("checkpoint_hash", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_evaluations_agent", "evaluations", ["agent_id", "evaluation"])


def downgrade() -> None:
    """Drop the table ``evaluations``."""
    op.drop_index("ix_evaluations_agent", table_name="evaluations")
    op.drop_table("evaluations")
