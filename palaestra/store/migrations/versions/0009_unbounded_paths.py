"""Paths of any length: a run's file, a brain dump's file, a reloaded module's file.

Revision ID: 0009_unbounded_paths
Revises: 0008_live_simulators
Create Date: 2026-12-01

``experiment_runs.file``, ``brain_states.path`` and ``code_reloads.path`` become TEXT instead of
VARCHAR(1024), so that every path Linux allows (up to 4,096 bytes, ``PATH_MAX``) is kept on
PostgreSQL too, which refused a longer one (``value too long for type character
varying(1024)``) and with it the run. SQLite never checked the length; there the three tables
are rebuilt with the new type (which copies their rows, the brain dumps too). On PostgreSQL the
change rewrites nothing: VARCHAR and TEXT are stored alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_unbounded_paths"
down_revision: str | None = "0008_live_simulators"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PATHS = (("experiment_runs", "file"), ("brain_states", "path"), ("code_reloads", "path"))
"""The path columns, by table."""


def upgrade() -> None:
    """Widen the three path columns to TEXT."""
    for table, column in PATHS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                column, existing_type=sa.String(1024), type_=sa.Text(), existing_nullable=False
            )


def downgrade() -> None:
    """Narrow them to VARCHAR(1024) again (fails on PostgreSQL if a path is longer)."""
    for table, column in reversed(PATHS):
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                column, existing_type=sa.Text(), type_=sa.String(1024), existing_nullable=False
            )
