"""palaestrAI 3.5.18's store schema as SQLAlchemy Core tables, and the check of a target's.

The tables, columns, types, keys, indexes and constraint names are those palaestrAI's
database model creates (``palaestrai database-create``, which runs SQLAlchemy's
``create_all``; it records no alembic revision): JSON columns are JSONB on PostgreSQL (but
``environments.parameters``, plain JSON), ``muscle_actions.mode`` and
``experiment_run_instances.status`` are enums (native types on PostgreSQL, VARCHARs on
SQLite), names follow palaestrAI's naming convention. Written from the schema palaestrAI
creates, for :mod:`palaestra.report.palaestrai_export`; palaestrAI itself is not imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    JSON,
    TIMESTAMP,
    Boolean,
    Column,
    Connection,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeEngine

from palaestra.core.errors import StoreError

VERSION = "3.5.18"
"""The palaestrAI release whose schema this is."""
MODES = ("train", "test", "evaluate")
"""The values of palaestrAI's ``mode_enum`` (``muscle_actions.mode``)."""
STATUSES = ("scheduled", "running", "finished", "error")
"""The values of ``experiment_run_instance_status_enum``."""

METADATA = MetaData(
    naming_convention={
        "ix": "ix__%(column_0_label)s",
        "uq": "uq__%(table_name)s__%(column_0_name)s",
        "ck": "ck__%(table_name)s__%(column_0_name)s",
        "fk": "fk__%(table_name)s__%(column_0_name)s__%(referred_table_name)s",
        "pk": "pk__%(table_name)s",
    }
)


def _json() -> TypeEngine[Any]:
    """JSON, JSONB on PostgreSQL."""
    return JSON().with_variant(JSONB(), "postgresql")


def _id() -> Column[int]:
    """An ``id`` primary key with palaestrAI's unique index on it."""
    return Column("id", Integer, primary_key=True, unique=True, index=True)


def _parent(name: str, table: str, *, index: bool = True, nullable: bool = True) -> Column[int]:
    """A foreign key to ``table``'s id, deleted with its row."""
    return Column(
        name,
        Integer,
        ForeignKey(f"{table}.id", ondelete="CASCADE"),
        index=index,
        nullable=nullable,
    )


def _walltime() -> Column[object]:
    return Column("walltime", TIMESTAMP(timezone=True), nullable=False)


experiments = Table(
    "experiments",
    METADATA,
    _id(),
    Column("name", String(255), nullable=False, unique=True, index=True),
    Column("document", Text),
    Column("document_json", _json()),
)

experiment_runs = Table(
    "experiment_runs",
    METADATA,
    _id(),
    Column("uid", String(255), index=True),
    Column("hash", String(255), index=True),
    _parent("experiment_id", "experiments"),
    Column("document", Text),
    Column("document_json", _json()),
    UniqueConstraint("experiment_id", "uid"),
)

experiment_run_instances = Table(
    "experiment_run_instances",
    METADATA,
    _id(),
    Column("uid", String(196), unique=True, index=True),
    Column("created_at", DateTime),
    Column("user", String(255), nullable=True),
    Column(
        "status",
        Enum(*STATUSES, name="experiment_run_instance_status_enum"),
        nullable=False,
        server_default=STATUSES[0],
    ),
    _parent("experiment_run_id", "experiment_runs"),
)

experiment_run_phases = Table(
    "experiment_run_phases",
    METADATA,
    _id(),
    Column("uid", String(255), nullable=False, index=True),
    Column("number", Integer, nullable=False),
    Column("mode", String(128), nullable=True),
    Column("configuration", _json(), nullable=True),
    _parent("experiment_run_instance_id", "experiment_run_instances"),
    UniqueConstraint("uid", "number", "mode", "experiment_run_instance_id"),
)

environments = Table(
    "environments",
    METADATA,
    _id(),
    Column("uid", String(255), nullable=False, index=True),
    Column("worker_uid", String(255), nullable=False, index=True),
    Column("environment_conductor_uid", String(255), nullable=False),
    Column("type", String(255), nullable=True),
    Column("parameters", JSON, nullable=True),
    Column("static_model", _json(), nullable=True),
    _parent("experiment_run_phase_id", "experiment_run_phases"),
    UniqueConstraint("uid", "worker_uid", "experiment_run_phase_id"),
)

world_states = Table(
    "world_states",
    METADATA,
    _id(),
    _walltime(),
    Column("simtime_ticks", Integer),
    Column("simtime_timestamp", TIMESTAMP),
    Column("episode", Integer),
    Column("state_dump", _json()),
    Column("setpoints", _json(), nullable=True),
    Column("done", Boolean, nullable=False),
    Column("mode", String(32), nullable=True),
    Column("execution_id", String(255), nullable=True),
    Column("step_index", Integer, nullable=True),
    _parent("environment_id", "environments"),
    Index(
        "ix_world_states_environment_execution_episode_simtime_step_id",
        "environment_id",
        "execution_id",
        "episode",
        "simtime_ticks",
        "step_index",
        "id",
    ),
)

agents = Table(
    "agents",
    METADATA,
    _id(),
    Column("uid", String(255), nullable=False, index=True),
    Column("name", String(255), nullable=True),
    Column("muscles", _json(), nullable=False),
    Column("configuration", _json(), nullable=True),
    _parent("experiment_run_phase_id", "experiment_run_phases", index=False, nullable=False),
    UniqueConstraint("uid", "experiment_run_phase_id"),
)

brain_states = Table(
    "brain_states",
    METADATA,
    _id(),
    _walltime(),
    Column("state", LargeBinary, nullable=True),
    Column("tag", String(96), index=True),
    Column("simtime_ticks", Integer, nullable=True),
    Column("simtime_timestamp", TIMESTAMP, nullable=True),
    _parent("agent_id", "agents"),
    Index(
        "ix_brain_states_agent_tag_id",
        "agent_id",
        "tag",
        "id",
        postgresql_using="btree",
        postgresql_ops={"id": "DESC"},
    ),
)

muscle_actions = Table(
    "muscle_actions",
    METADATA,
    _id(),
    _walltime(),
    _parent("agent_id", "agents"),
    Column("episode", Integer),
    Column("simtimes", _json(), nullable=False),
    Column("sensor_readings", _json(), nullable=True),
    Column("actuator_setpoints", _json(), nullable=True),
    Column("applied_actuator_setpoints", _json(), nullable=True),
    Column("rewards", _json(), nullable=True),
    Column("objective", Float),
    Column("done", Boolean),
    Column("terminated", Boolean, nullable=True),
    Column("truncated", Boolean, nullable=True),
    Column("decision_index", Integer, nullable=True),
    Column("mode", Enum(*MODES, name="mode_enum")),
    Column("statistics", _json(), nullable=True),
    Column("rollout_worker_uid", String(255)),
    Index(
        "ix_muscle_actions_agent_worker_episode_decision",
        "agent_id",
        "mode",
        "rollout_worker_uid",
        "episode",
        "decision_index",
    ),
)

# palaestrAI's evaluation results (palaestra's ``evaluations``); the tables after it
# palaestrAI has and palaestra writes nothing into: created so that the target is a whole
# palaestrAI store.

stored_evaluation_results = Table(
    "stored_evaluation_results",
    METADATA,
    Column("evaluation_id", String(64), primary_key=True),
    Column("experiment_run_uid", String(255), nullable=False, index=True),
    Column("experiment_run_instance_uid", String(196), nullable=False, index=True),
    Column("experiment_run_phase", Integer, nullable=False, index=True),
    Column("agent_name", String(255), nullable=False, index=True),
    Column("evaluation_episode", Integer, nullable=False),
    Column("metrics", _json(), nullable=False),
    Column("checkpoint_id", String(255), nullable=True),
    Column("checkpoint_hash", String(255), nullable=True),
    Column("completed_at", TIMESTAMP(timezone=True), nullable=False),
    Column("payload_hash", String(64), nullable=False),
    Index(
        "ix_stored_evaluation_results_instance_phase_agent_episode_id",
        "experiment_run_instance_uid",
        "experiment_run_phase",
        "agent_name",
        "evaluation_episode",
        "evaluation_id",
    ),
)

phase_termination_events = Table(
    "phase_termination_events",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("experiment_run_uid", String(255), nullable=False, index=True),
    Column("experiment_run_instance_uid", String(196), nullable=False, index=True),
    Column("experiment_run_phase", Integer, nullable=False),
    Column(
        "reason",
        Enum(
            "success",
            "plateau",
            "max_episodes",
            "cancelled",
            "failed",
            name="phase_termination_reason_enum",
        ),
        nullable=False,
    ),
    Column("configuration_fingerprint", String(64), nullable=False),
    Column("triggering_evaluation_id", String(64), nullable=True),
    Column("checkpoint_id", String(255), nullable=True),
    Column("checkpoint_hash", String(255), nullable=True),
    Column("terminated_at", TIMESTAMP(timezone=True), nullable=False),
    Column("payload_hash", String(64), nullable=False),
    UniqueConstraint(
        "experiment_run_uid",
        "experiment_run_instance_uid",
        "experiment_run_phase",
        name="uq_phase_termination_events_instance_phase",
    ),
    Index(
        "ix_phase_termination_events_instance_phase_reason",
        "experiment_run_instance_uid",
        "experiment_run_phase",
        "reason",
    ),
)

checkpoint_refs = Table(
    "checkpoint_refs",
    METADATA,
    Column("checkpoint_id", String(255), primary_key=True),
    Column("package_hash", String(255), nullable=False),
    Column("relative_path", String(1024), nullable=False),
    Column("experiment_run_uid", String(255), nullable=False, index=True),
    Column("experiment_run_instance_uid", String(196), nullable=False, index=True),
    Column("experiment_run_phase", Integer, nullable=False, index=True),
    Column("agent_name", String(255), nullable=True),
    Column("kind", String(64), nullable=False),
    Column("mode", String(32), nullable=True),
    Column("evaluation_id", String(64), nullable=True),
    Column("configuration_fingerprint", String(64), nullable=False),
    Column("store_high_water_marks", _json(), nullable=False),
    Column("completed_at", TIMESTAMP(timezone=True), nullable=False),
    Column("retained", Boolean, nullable=False),
    Column("pruned_at", TIMESTAMP(timezone=True), nullable=True),
    Column("payload_hash", String(64), nullable=False),
    Index(
        "ix_checkpoint_refs_instance_phase_agent_kind_retained",
        "experiment_run_instance_uid",
        "experiment_run_phase",
        "agent_name",
        "kind",
        "retained",
    ),
)

templates = Table(
    "templates",
    METADATA,
    _id(),
    Column(
        "type",
        Enum(
            "experiment",
            "experiment_run",
            "phase",
            "environment",
            "agent",
            "simulation",
            "run_configuration",
            name="template_type_enum",
        ),
        nullable=False,
    ),
    Column("name", String(255), nullable=False),
    Column("contents", Text, nullable=False),
    Column("creator", String(255), nullable=True),
)

WRITTEN = (
    experiments,
    experiment_runs,
    experiment_run_instances,
    experiment_run_phases,
    environments,
    agents,
    world_states,
    muscle_actions,
    brain_states,
)
"""The tables an export writes rows into."""
PALAESTRA_VERSION_TABLE = "palaestra_alembic_version"
"""The table that marks a palaestra store (see :mod:`palaestra.store.schema`)."""


def prepare(connection: Connection, target: str) -> list[str]:
    """Create the palaestrAI tables that ``connection``'s database lacks; refuse one whose
    tables of palaestrAI's names lack palaestrAI's columns (extra columns are fine).

    Args:
        connection: The target, in a transaction.
        target: The target's URI with its password masked, for messages.

    Returns:
        The names of the tables created.

    Raises:
        StoreError: A table of palaestrAI's name is in the way.
    """
    names = set(inspect(connection).get_table_names())
    lacking = {
        table.name: missing
        for table in METADATA.sorted_tables
        if table.name in names
        and (missing := _missing_columns(connection, table.name, table.columns.keys()))
    }
    if lacking:
        raise StoreError(_in_the_way(target, lacking, PALAESTRA_VERSION_TABLE in names))
    created = [table for table in METADATA.sorted_tables if table.name not in names]
    METADATA.create_all(connection, tables=created)
    return [table.name for table in created]


def _missing_columns(connection: Connection, table: str, columns: Iterable[str]) -> list[str]:
    present = {column["name"] for column in inspect(connection).get_columns(table)}
    return [name for name in columns if name not in present]


def _in_the_way(target: str, lacking: dict[str, list[str]], palaestra: bool) -> str:
    if palaestra:
        return (
            f"target {target} is a palaestra store, not a palaestrAI one (its tables have "
            "other columns): export into another database (a new SQLite file, or an empty "
            "PostgreSQL database)"
        )
    what = "; ".join(f"{table} lacks {', '.join(columns)}" for table, columns in lacking.items())
    return (
        f"target {target}: its tables are not palaestrAI {VERSION}'s ({what}); if palaestrAI "
        f"made them, upgrade them to palaestrAI {VERSION}'s schema (palaestrai "
        "database-migrate), else export into another database"
    )
