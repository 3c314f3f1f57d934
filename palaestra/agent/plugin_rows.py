"""What an agent's plug-in (its Brain or a Muscle) sends to the store besides its steps: the
statistics it adds with ``add_statistics``, the records it makes with ``context.record``, and
the rows of its process's hot reloads."""

from __future__ import annotations

from functools import partial
from typing import Any

import zmq

from palaestra.agent.statistics import none_added, record_statistics
from palaestra.core.plugin_records import recorder_for, send_records
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    RowSink,
    code_reload_values,
    plugin_record_values,
    send,
    statistics_values,
)


class PluginRows:
    """The statistics and plug-in record sinks of process ``name``, whose plug-in is the
    ``kind`` (``brain`` or ``muscle``) of agent ``agent`` (of id ``agent_id``, in phase
    ``phase_id``). They keep what they are given until :meth:`connect` gives them the store."""

    __slots__ = (
        "agent_id",
        "phase_id",
        "kind",
        "source",
        "recorder",
        "store",
        "statistics",
        "records",
    )

    def __init__(self, name: str, kind: str, agent: str, agent_id: int, phase_id: int) -> None:
        self.agent_id = agent_id
        self.phase_id = phase_id
        self.kind = kind
        self.source = f"{kind}:{agent}"  # of its plug-in records
        self.recorder = recorder_for(name)  # what its plug-in records with context.record
        self.store: zmq.Socket[bytes] | None = None  # the store's socket, once connected
        self.statistics = RowSink(None, "statistics", shape=partial(statistics_values, agent_id))
        self.records = RowSink(
            None, "plugin_records", shape=partial(plugin_record_values, phase_id)
        )

    def connect(self, store: zmq.Socket[bytes] | None, plugin: Any) -> None:
        """Send to the store's socket from now on (None: no store), naming ``plugin``'s
        methods in the errors of what it gave."""
        self.store = store
        self.statistics = RowSink(
            store, "statistics", plugin=(plugin, "add_statistics"), shape=self.statistics.shape
        )
        self.records = RowSink(
            store, "plugin_records", plugin=(plugin, "record"), shape=self.records.shape
        )

    def sinks(self) -> tuple[RowSink, ...]:
        return self.statistics, self.records

    def swap(self, plugin: Any) -> None:
        """A hot reload swapped in ``plugin``: errors name it."""
        for sink in self.sinks():
            if sink.plugin is not None:
                sink.plugin = (plugin, sink.plugin[1])

    def add(self, plugin: Any, worker: int, episode: int, step: int) -> None:
        """Add what ``plugin`` added with ``add_statistics`` and ``context.record`` since the
        last time as rows of this step."""
        if not self.recorder.records and none_added(plugin):  # (most steps: nothing)
            return
        record_statistics(plugin, self.statistics, self.kind, worker, episode, step)
        send_records(self.recorder, self.records, self.source, worker, episode, step)

    def code_reloads(self, rows: list[m.CodeReloadRow]) -> None:
        """The rows of a hot reload's attempts, sent at once."""
        shaped = [code_reload_values(self.phase_id, row) for row in rows]
        send(self.records.socket, m.Rows(table="code_reloads", rows=shaped))
