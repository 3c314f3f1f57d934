"""The store writer's rows for plug-in records, recording gaps and code reloads (see
:mod:`palaestra.core.plugin_records`, :mod:`palaestra.core.recording_control` and
:mod:`palaestra.agent.hot_reload`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Connection, Engine, Table, select, update

from palaestra.core import messages as m
from palaestra.store.models import Agent, CodeReload, Environment, PluginRecord, RecordingGap

PLUGIN_RECORDS: Table = PluginRecord.__table__  # type: ignore[assignment]
RECORDING_GAPS: Table = RecordingGap.__table__  # type: ignore[assignment]
CODE_RELOADS: Table = CodeReload.__table__  # type: ignore[assignment]


class PhaseIds:
    """The phase (its id in the store) of agents and environments, looked up once each."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, int], int] = {}

    def of(self, engine: Engine, agent_id: int | None, environment_id: int | None) -> int:
        """The phase id of the agent ``agent_id`` or else the environment ``environment_id``.

        Raises:
            LookupError: Neither is in the store (a bug of the sender).
        """
        if agent_id is not None:
            key, column, owner = ("agent", agent_id), Agent.experiment_run_phase_id, Agent.id
        elif environment_id is not None:
            key = ("environment", environment_id)
            column, owner = Environment.experiment_run_phase_id, Environment.id
        else:
            raise LookupError("a plug-in record names neither an agent nor an environment")
        if key not in self.known:
            with engine.connect() as connection:
                phase_id = connection.scalar(select(column).where(owner == key[1]))
            if phase_id is None:
                raise LookupError(f"no {key[0]} with the id {key[1]} in the store")
            self.known[key] = phase_id
        return self.known[key]


def plugin_record_rows(message: m.PluginRecordRows, phase_id: int) -> list[dict[str, Any]]:
    """The ``plugin_records`` rows of ``message``, in phase ``phase_id``."""
    return [
        {
            "experiment_run_phase_id": phase_id,
            "source": row.source,
            "worker": row.worker,
            "episode": row.episode,
            "step": row.step,
            "key": row.key,
            "value": row.value,
        }
        for row in message.rows
    ]


def code_reload_rows(message: m.CodeReloads, phase_id: int) -> list[dict[str, Any]]:
    """The ``code_reloads`` rows of ``message``, in phase ``phase_id``."""
    return [
        {
            "experiment_run_phase_id": phase_id,
            "source": row.source,
            "worker": row.worker,
            "episode": row.episode,
            "step": row.step,
            "module": row.module,
            "path": row.path,
            "ok": row.ok,
            "error": row.error,
            "at": dt.datetime.fromtimestamp(row.at, dt.UTC),
        }
        for row in message.rows
    ]


def mark_gap(connection: Connection, phase_id: int, mark: m.RecordingGapMark) -> None:
    """Open a gap where recording paused (unless one is open: another producer of the worker
    saw it first), or close the worker's open gap where it resumed."""
    of_worker = (
        RecordingGap.experiment_run_phase_id == phase_id,
        RecordingGap.worker == mark.worker,
        RecordingGap.to_episode.is_(None),
    )
    open_gap = connection.scalar(select(RecordingGap.id).where(*of_worker).limit(1))
    if mark.paused and open_gap is None:
        connection.execute(
            RECORDING_GAPS.insert(),
            [
                {
                    "experiment_run_phase_id": phase_id,
                    "worker": mark.worker,
                    "from_episode": mark.episode,
                    "from_step": mark.step,
                }
            ],
        )
    elif not mark.paused and open_gap is not None:
        connection.execute(
            update(RecordingGap)
            .where(RecordingGap.id == open_gap)
            .values(to_episode=mark.episode, to_step=mark.step)
        )
