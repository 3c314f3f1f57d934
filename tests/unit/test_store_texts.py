"""Texts a run gives the store that PostgreSQL refuses and SQLite keeps: the same on every store.

A NUL character (PostgreSQL's text columns refuse it: ``PostgreSQL text fields cannot contain
NUL (0x00) bytes``) in a run's reason or a failed reload's traceback is kept as ``\\x00``; in a
``context.record`` key or a dump's tag it fails in the plug-in's call (test_recording.py,
test_dumps_and_statistics.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra.core.wire import messages as m
from palaestra.core.wire.records import code_reload_values
from palaestra.store import rows
from palaestra.store.direct import record_run_end
from palaestra.store.writer import StoreWriter
from tests.unit.test_store_query import phase_start, request, run_start

REASON = "Muscle-a-0 (m:M.propose_actions): ValueError: bad value a\x00b"
KEPT = "Muscle-a-0 (m:M.propose_actions): ValueError: bad value a\\x00b"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    uri: str = request.getfixturevalue("pg_uri")
    return uri


@pytest.fixture
def writer(store_uri: str) -> Iterator[StoreWriter]:
    writer = StoreWriter("store", store_uri)
    writer.open()
    yield writer
    asyncio.run(writer.teardown())


def started(writer: StoreWriter, instance: str) -> dict[str, Any]:
    ids: dict[str, Any] = dict(request(writer, run_start("run-t", instance, "exp-t")).ids)
    ids.update(request(writer, phase_start(ids["instance"], 0, "only", "train", 1, 1)).ids)
    return ids


def test_a_reason_with_a_nul_character_is_recorded_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """A plug-in's exception saying a NUL character failed recording the run's end on
    PostgreSQL, in the store writer and again straight into the store (``could not record the
    end of the run in the store``): the run stayed ``running`` there, while SQLite said
    ``error`` and why."""
    ids = started(writer, "by-writer")
    request(writer, m.StoreRunEnd(instance_id=ids["instance"], status="error", reason=REASON))
    started(writer, "direct")

    assert record_run_end(store_uri, "direct", "error", REASON)

    shown = {r["instance_uid"]: (r["status"], r["reason"]) for r in rows.runs(store_uri=store_uri)}
    assert shown == {"by-writer": ("error", KEPT), "direct": ("error", KEPT)}
    phases = rows.phases("run-t", store_uri=store_uri, instance="by-writer")
    assert [p["status"] for p in phases] == ["error"]


def test_a_failed_reload_s_traceback_with_a_nul_character_is_kept_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """A plug-in module whose reload raised an exception saying a NUL character: its
    ``code_reloads`` row failed the run in the store writer on PostgreSQL."""
    ids = started(writer, "reloaded")
    row = m.CodeReloadRow("muscle:attacker", 0, 0, 3, "m", "/x/m.py", False, REASON, 1.5e9)

    writer.accept(m.Rows(table="code_reloads", rows=[code_reload_values(ids["phase"], row)]))

    (reload,) = rows.code_reloads("run-t", store_uri=store_uri)
    assert (reload["ok"], reload["error"]) == (False, KEPT)
