"""Where one game's rows go: its ``world_states`` rows, its plug-in's records, and whether
recording is paused.

A :class:`WorldRows` belongs to one :class:`~palaestra.environment.world.World`: its sinks
shape the game's rows (its environment's id, its worker) and are the store's once the process
that plays the game serves (:mod:`palaestra.environment.environment_process`); a replay swaps
in a tape (:mod:`palaestra.replay.live`). A change of the run's recording switch (``palaestra
experiment-record pause|resume``) is told to the store, in order with the rows, as the start or
the end of a gap (``recording_gaps``).
"""

from __future__ import annotations

from typing import Any

from palaestra.core.plugin_records import recorder_for, send_records
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    RowSink,
    plugin_record_values,
    send,
    world_state_values,
)


class WorldRows:
    """The rows of one game (see the module's description).

    Args:
        name: The name of the process the game plays in (its plug-in's records name it).
        environment_uid: The environment's uid in the run file (the records' source).
        environment_id: The environment's id in the store.
        phase_id: The phase's id in the store.
        worker: The worker (with ``envs_per_worker``: the game's lane) its rows are under.
        every: Which steps get a ``world_states`` row (see ``record_every``).
    """

    def __init__(
        self,
        name: str,
        environment_uid: str,
        environment_id: int,
        phase_id: int,
        worker: int,
        every: int,
    ) -> None:
        self.environment_id = environment_id
        self.phase_id = phase_id
        self.worker = worker
        self.every = every
        self.recorder = recorder_for(name)  # what the plug-in records with context.record
        self.source = f"env:{environment_uid}"  # of its plug-in records
        self.switch = RecordingSwitch()
        self.paused = False  # recording is paused: steps run, no rows (see recording_gaps)
        self.rows = RowSink(None, "world_states", shape=self.row_values)
        self.records = RowSink(None, "plugin_records", shape=self.record_values)

    def row_values(self, row: m.WorldStateRow) -> tuple[Any, ...]:
        """The row ready to insert (see :class:`~palaestra.core.wire.messages.Rows`)."""
        return world_state_values(self.environment_id, self.worker, row)

    def record_values(self, row: m.PluginRecordRow) -> tuple[Any, ...]:
        return plugin_record_values(self.phase_id, row)

    def send_records(self, episode: int, step: int) -> None:
        """Add what the plug-in recorded with ``context.record`` as rows of this step."""
        send_records(self.recorder, self.records, self.source, self.worker, episode, step)

    def recording(self, episode: int, step: int) -> bool:
        """Whether this step's row is written: not while recording is paused. A change is
        told to the store as the start or the end of a gap (``recording_gaps``)."""
        paused = self.switch.paused()
        if paused != self.paused:
            self.paused = paused
            self.rows.flush()
            mark = m.RecordingGapMark(
                phase_id=self.phase_id,
                worker=self.worker,
                episode=episode,
                step=step,
                paused=paused,
            )
            send(self.rows.socket, mark)
        return not paused
