"""What a Muscle process sends to the store: its ``muscle_actions`` rows, its Muscle's
statistics and plug-in records (with the recorder its Muscle records through and the run's
recording switch), and the rows of its hot reloads."""

from __future__ import annotations

from typing import Any

import zmq

from palaestra.agent.muscle import Muscle
from palaestra.core.plugin_records import recorder_for
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    RowSink,
    code_reload_values,
    muscle_action_values,
    plugin_record_values,
    send,
    statistics_values,
)


class MuscleRecords:
    """The row sinks of Muscle process ``name`` (its agent ``agent`` of id ``agent_id``, in
    ``worker``, phase ``phase_id``; ``every``: which steps get a row, see PhaseConfig). They
    keep what they are given until :meth:`connect` gives them the store."""

    __slots__ = (
        "agent_id",
        "worker",
        "phase_id",
        "every",
        "source",
        "recorder",
        "switch",
        "rows",
        "statistics",
        "records",
    )

    def __init__(
        self, name: str, agent: str, agent_id: int, worker: int, phase_id: int, every: int
    ) -> None:
        self.agent_id = agent_id
        self.worker = worker
        self.phase_id = phase_id
        self.every = every
        self.source = f"muscle:{agent}"  # of its plug-in records
        self.recorder = recorder_for(name)
        self.switch = RecordingSwitch()
        self.rows = RowSink(None, "muscle_actions", shape=self._action)
        self.statistics = RowSink(None, "statistics", shape=self._statistics)
        self.records = RowSink(None, "plugin_records", shape=self._record)

    def connect(self, store: zmq.Socket[bytes] | None, muscle: Muscle) -> None:
        """Send to the store's socket from now on (None: no store), naming ``muscle``'s
        methods in the errors of what it gave."""
        self.rows = RowSink(
            store, "muscle_actions", plugin=(muscle, "propose_actions"), shape=self._action
        )
        self.statistics = RowSink(
            store, "statistics", plugin=(muscle, "add_statistics"), shape=self._statistics
        )
        self.records = RowSink(
            store, "plugin_records", plugin=(muscle, "record"), shape=self._record
        )

    def sinks(self) -> tuple[RowSink, RowSink, RowSink]:
        return self.rows, self.statistics, self.records

    def swap(self, muscle: Muscle) -> None:
        """A hot reload swapped in ``muscle``: errors name it."""
        for sink in self.sinks():
            if sink.plugin is not None:
                sink.plugin = (muscle, sink.plugin[1])

    def push(self) -> None:
        """Send the rows and statistics kept so far."""
        self.rows.flush()
        self.statistics.flush()

    def code_reloads(self, rows: list[m.CodeReloadRow]) -> None:
        """The rows of a hot reload's attempts, sent at once."""
        shaped = [code_reload_values(self.phase_id, row) for row in rows]
        send(self.records.socket, m.Rows(table="code_reloads", rows=shaped))

    def _action(self, row: m.MuscleActionRow) -> tuple[Any, ...]:
        return muscle_action_values(self.agent_id, self.worker, row)

    def _statistics(self, row: m.StatisticsRow) -> tuple[Any, ...]:
        return statistics_values(self.agent_id, row)

    def _record(self, row: m.PluginRecordRow) -> tuple[Any, ...]:
        return plugin_record_values(self.phase_id, row)
