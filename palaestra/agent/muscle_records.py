"""What a Muscle process sends to the store: its ``muscle_actions`` rows (with the run's
recording switch), and, as every plug-in's (:class:`~palaestra.agent.plugin_rows.PluginRows`),
its Muscle's statistics and plug-in records and the rows of its hot reloads."""

from __future__ import annotations

from functools import partial

import zmq

from palaestra.agent.muscle import Muscle
from palaestra.agent.plugin_rows import PluginRows
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.wire.records import RowSink, muscle_action_values


class MuscleRecords(PluginRows):
    """The row sinks of Muscle process ``name`` (its agent ``agent`` of id ``agent_id``, in
    ``worker``, phase ``phase_id``; ``every``: which steps get a row, see PhaseConfig)."""

    __slots__ = ("worker", "every", "switch", "rows")

    def __init__(
        self, name: str, agent: str, agent_id: int, worker: int, phase_id: int, every: int
    ) -> None:
        super().__init__(name, "muscle", agent, agent_id, phase_id)
        self.worker = worker
        self.every = every
        self.switch = RecordingSwitch()
        self.rows = RowSink(
            None, "muscle_actions", shape=partial(muscle_action_values, agent_id, worker)
        )

    def connect(self, store: zmq.Socket[bytes] | None, plugin: Muscle) -> None:
        super().connect(store, plugin)
        self.rows = RowSink(
            store, "muscle_actions", plugin=(plugin, "propose_actions"), shape=self.rows.shape
        )

    def sinks(self) -> tuple[RowSink, ...]:
        return self.rows, self.statistics, self.records

    def push(self) -> None:
        """Send the rows and statistics kept so far."""
        self.rows.flush()
        self.statistics.flush()
