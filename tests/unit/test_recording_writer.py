"""The store writer's plug-in records and recording gaps, against a real SQLite file."""

from __future__ import annotations

import json

import pytest

from palaestra.core.wire import messages as m
from palaestra.core.wire.records import plugin_record_values
from palaestra.store.writer import StoreWriter
from tests.unit.test_store_writer import select_all, start, store_uri, writer

__all__ = ["store_uri", "writer"]  # the fixtures, used here


def environment_id(ids: dict[str, int]) -> int:
    return next(v for k, v in ids.items() if k.startswith("environment"))


def agent_id(ids: dict[str, int]) -> int:
    return next(v for k, v in ids.items() if k.startswith("agent"))


def test_plugin_records_land_in_their_phase(writer: StoreWriter) -> None:
    ids = start(writer)
    phase = ids["phase"]  # as a Muscle's and an environment's process shape them
    row = m.PluginRecordRow("muscle:attacker", 1, 2, 3, "q", {"a": [1, 2]})
    writer.accept(m.Rows(table="plugin_records", rows=[plugin_record_values(phase, row)]))
    env = m.PluginRecordRow("env:env", 0, 0, 1, "load", None)
    writer.accept(
        m.decode(m.encode(m.Rows(table="plugin_records", rows=[plugin_record_values(phase, env)])))
    )
    writer.flush()

    found = select_all(
        writer,
        "SELECT experiment_run_phase_id, source, worker, episode, step, key, value "
        "FROM plugin_records ORDER BY id",
    )
    assert [(*r[:6], json.loads(r[6]) if r[6] else r[6]) for r in found] == [
        (phase, "muscle:attacker", 1, 2, 3, "q", {"a": [1, 2]}),
        (phase, "env:env", 0, 0, 1, "load", None),
    ]


def test_a_gap_opens_once_and_closes_once_per_worker(writer: StoreWriter) -> None:
    phase = start(writer)["phase"]

    def mark(worker: int, episode: int, step: int, paused: bool) -> None:
        writer.accept(
            m.RecordingGapMark(
                phase_id=phase, worker=worker, episode=episode, step=step, paused=paused
            )
        )

    mark(0, 1, 3, True)
    mark(0, 1, 3, True)  # a second environment of the worker saw it too
    mark(1, 1, 4, True)
    mark(0, 2, 5, False)
    mark(0, 2, 5, False)
    found = select_all(
        writer,
        "SELECT worker, from_episode, from_step, to_episode, to_step FROM recording_gaps "
        "ORDER BY id",
    )
    assert [tuple(r) for r in found] == [(0, 1, 3, 2, 5), (1, 1, 4, None, None)]


def test_rows_of_an_unknown_table_are_a_bug_of_their_sender(writer: StoreWriter) -> None:
    start(writer)
    with pytest.raises(TypeError, match="rows of table 'nope'"):
        writer.accept(m.Rows(table="nope", rows=[]))
