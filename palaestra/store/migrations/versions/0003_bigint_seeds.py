"""Run seeds as 64-bit integers.

Revision ID: 0003_bigint_seeds
Revises: 0002_provenance_and_reward
Create Date: 2026-11-22

``experiment_runs.seed`` becomes a BIGINT, so that every seed a run file may give (0 to
2^63 - 1) is kept on PostgreSQL too, where INTEGER ends at 2^31 - 1. SQLite keeps 64-bit
integers in either type; there the table is rebuilt with the new type.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_bigint_seeds"
down_revision: str | None = "0002_provenance_and_reward"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Widen ``experiment_runs.seed`` to BIGINT."""
    with op.batch_alter_table("experiment_runs") as batch:
        batch.alter_column(
            "seed", existing_type=sa.Integer(), type_=sa.BigInteger(), existing_nullable=False
        )


def downgrade() -> None:
    """Narrow ``experiment_runs.seed`` to INTEGER (fails on PostgreSQL if a seed is larger)."""
    with op.batch_alter_table("experiment_runs") as batch:
        batch.alter_column(
            "seed", existing_type=sa.BigInteger(), type_=sa.Integer(), existing_nullable=False
        )
