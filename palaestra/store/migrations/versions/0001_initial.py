"""The store's first schema: experiments, runs, instances, phases, and what the phases wrote.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-22

The schema of ``palaestra/store/models.py`` at commit f76f4b2, written out by hand so that it
never changes with the models; constraint and index names are SQLAlchemy's defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = sa.String(255)
"""The models' default for ``str`` columns."""

TABLES = (
    "experiments",
    "experiment_runs",
    "experiment_run_instances",
    "experiment_run_phases",
    "environments",
    "agents",
    "world_states",
    "muscle_actions",
    "brain_states",
)
"""Every table, parents first."""


def timestamp(name: str, nullable: bool = False) -> sa.Column[Any]:
    """A timezone-aware timestamp column (the models' ``UTCDateTime``)."""
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def key() -> sa.Column[Any]:
    """The integer primary key ``id``."""
    return sa.Column("id", sa.Integer(), primary_key=True)


def parent(name: str, table: str) -> sa.Column[Any]:
    """A required foreign key to ``table.id``."""
    return sa.Column(name, sa.Integer(), sa.ForeignKey(f"{table}.id"), nullable=False)


def required(name: str, type_: sa.types.TypeEngine[Any]) -> sa.Column[Any]:
    """A NOT NULL column."""
    return sa.Column(name, type_, nullable=False)


def upgrade() -> None:
    """Create every table and index of the first schema."""
    create_runs()
    create_phases()
    create_records()


def create_runs() -> None:
    """Experiments, their runs, and the runs' instances."""
    op.create_table(
        "experiments",
        key(),
        required("uid", NAME),
        timestamp("created_at"),
        sa.UniqueConstraint("uid"),
    )
    op.create_table(
        "experiment_runs",
        key(),
        required("uid", NAME),
        parent("experiment_id", "experiments"),
        required("document", sa.Text()),
        required("file", sa.String(1024)),
        required("seed", sa.Integer()),
        timestamp("created_at"),
        sa.UniqueConstraint("uid"),
    )
    op.create_index("ix_experiment_runs_experiment_id", "experiment_runs", ["experiment_id"])
    op.create_table(
        "experiment_run_instances",
        key(),
        required("uid", sa.String(36)),
        parent("experiment_run_id", "experiment_runs"),
        required("status", sa.String(16)),
        required("reason", sa.Text()),
        timestamp("started_at"),
        timestamp("finished_at", nullable=True),
        required("palaestra_version", sa.String(64)),
        required("host", NAME),
        sa.UniqueConstraint("uid"),
    )
    op.create_index(
        "ix_experiment_run_instances_experiment_run_id",
        "experiment_run_instances",
        ["experiment_run_id"],
    )


def create_phases() -> None:
    """Phases, with their environments and agents."""
    op.create_table(
        "experiment_run_phases",
        key(),
        parent("experiment_run_instance_id", "experiment_run_instances"),
        required("index", sa.Integer()),
        required("name", NAME),
        required("mode", sa.String(16)),
        required("workers", sa.Integer()),
        required("episodes", sa.Integer()),
        required("config", sa.JSON()),
        required("status", sa.String(16)),
        timestamp("started_at"),
        timestamp("finished_at", nullable=True),
        sa.UniqueConstraint("experiment_run_instance_id", "index"),
    )
    op.create_table(
        "environments",
        key(),
        parent("experiment_run_phase_id", "experiment_run_phases"),
        required("uid", NAME),
        required("name", NAME),
        required("params", sa.JSON()),
        required("seeds", sa.JSON()),
    )
    op.create_index(
        "ix_environments_experiment_run_phase_id", "environments", ["experiment_run_phase_id"]
    )
    op.create_table(
        "agents",
        key(),
        parent("experiment_run_phase_id", "experiment_run_phases"),
        *(required(name, NAME) for name in ("name", "brain", "muscle", "objective")),
        required("config", sa.JSON()),
        required("seeds", sa.JSON()),
        sa.Column("loaded_from", sa.JSON(), nullable=True),
        sa.UniqueConstraint("experiment_run_phase_id", "name"),
    )


def create_records() -> None:
    """The per-step rows of environments and agents, and the agents' brain dumps."""
    steps = ("worker", "episode", "step")
    op.create_table(
        "world_states",
        key(),
        parent("environment_id", "environments"),
        *(required(name, sa.Integer()) for name in steps),
        *(required(name, sa.JSON()) for name in ("sensors", "setpoints", "rewards")),
        required("done", sa.Boolean()),
    )
    op.create_index("ix_world_states_env_step", "world_states", ["environment_id", *steps])
    op.create_table(
        "muscle_actions",
        key(),
        parent("agent_id", "agents"),
        *(required(name, sa.Integer()) for name in steps),
        *(
            required(name, sa.JSON())
            for name in ("sensor_readings", "actuator_setpoints", "rewards")
        ),
        sa.Column("objective", sa.Float(), nullable=True),
        required("done", sa.Boolean()),
    )
    op.create_index("ix_muscle_actions_agent_step", "muscle_actions", ["agent_id", *steps])
    op.create_table(
        "brain_states",
        key(),
        parent("agent_id", "agents"),
        required("tag", NAME),
        required("path", sa.String(1024)),
        required("dump", sa.LargeBinary()),
        timestamp("created_at"),
    )
    op.create_index("ix_brain_states_agent_id", "brain_states", ["agent_id"])


def downgrade() -> None:
    """Drop every table (and with them their indexes), children first."""
    for table in reversed(TABLES):
        op.drop_table(table)
