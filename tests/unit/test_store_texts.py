"""Texts a run gives the store that PostgreSQL refuses and SQLite keeps: the same on every store.

A NUL character (PostgreSQL's text columns refuse it: ``PostgreSQL text fields cannot contain
NUL (0x00) bytes``) in a run's reason or a failed reload's traceback is kept as ``\\x00``, a lone
surrogate (which both drivers refuse: no UTF-8 encoder takes it) as its escape ``\\udcff``; a
NUL in a ``context.record`` key or a dump's tag fails in the plug-in's call (test_recording.py,
test_dumps_and_statistics.py). A path longer than 1,024 characters (a run file's, a dump's, a
reloaded module's; Linux allows 4,096 bytes) is kept whole: its columns were ``VARCHAR(1024)``.
A reason or traceback of megabytes is kept as its head and tail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from palaestra.core.description.name_rules import REASON_MAX
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import code_reload_values, evaluation_values
from palaestra.store import rows
from palaestra.store.direct import record_run_end
from palaestra.store.engine import make_engine
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


def test_an_evaluation_result_s_texts_and_non_finite_metrics_are_kept_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """A Brain's ``EvaluationResult`` names its checkpoint as it likes and may score NaN or an
    infinity: the ``evaluations`` row keeps the NUL as ``\\x00``, a lone surrogate as its
    escape, and the non-finite numbers (as the strings the store's JSON holds them as, read
    back as floats)."""
    ids = started(writer, "evaluated")
    result = m.AgentEvaluated(
        agent="attacker",
        evaluation=0,
        result=True,
        metrics={"score": float("nan"), "loss": float("-inf"), "bad \udcff": 1.0, "text": None},
        checkpoint_id="run a\x00b",
        checkpoint_hash="h \udcff",
    )
    values = evaluation_values(ids["agent:attacker"], result, (2, 0, 2), 1.5e9)

    writer.accept(m.decode(m.encode(m.Rows(table="evaluations", rows=[values]))))  # (as sent)

    (row,) = rows.evaluations("run-t", store_uri=store_uri)
    assert (row["checkpoint_id"], row["checkpoint_hash"]) == ("run a\\x00b", "h \\udcff")
    metrics = row["metrics"]
    assert metrics["score"] != metrics["score"] and metrics["loss"] == float("-inf")
    assert (metrics["bad \\udcff"], metrics["text"]) == (1.0, None)
    assert (row["evaluation"], row["training_episodes"], row["episode"]) == (0, 2, 2)


def test_a_reason_with_a_lone_surrogate_is_recorded_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """Both drivers refuse a text UTF-8 cannot encode (``UnicodeEncodeError``): the reason (a
    plug-in's exception saying ``os.fsdecode`` of bytes that are no UTF-8) is kept with the
    surrogate as its escape, by the writer and straight into the store."""
    reason = "Muscle-a-0 (m:M.propose_actions): ValueError: bad \udcff"
    ids = started(writer, "by-writer")
    request(writer, m.StoreRunEnd(instance_id=ids["instance"], status="error", reason=reason))
    started(writer, "direct")

    assert record_run_end(store_uri, "direct", "error", reason)

    kept = "Muscle-a-0 (m:M.propose_actions): ValueError: bad \\udcff"
    shown = {r["instance_uid"]: (r["status"], r["reason"]) for r in rows.runs(store_uri=store_uri)}
    assert shown == {"by-writer": ("error", kept), "direct": ("error", kept)}


HUGE = "Muscle-a-0 (m:M.propose_actions): ClientError: " + "x" * 5_000_000 + "\nthe end"
"""A plug-in's exception text of 5 MB (an external client's error: one of 50 MB was seen)."""


def test_a_huge_reason_is_kept_as_its_head_and_tail_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """A plug-in's exception text of 50 MB became a reason of 50 MB in the store (and a failed
    reload's traceback would have): each is kept as its first and last characters with a line
    between that says how many were cut, by the writer and straight into the store; one of at
    most :data:`REASON_MAX` characters whole."""
    ids = started(writer, "by-writer")
    row = m.CodeReloadRow("muscle:attacker", 0, 0, 3, "m", "/x/m.py", False, HUGE, 1.5e9)
    writer.accept(m.Rows(table="code_reloads", rows=[code_reload_values(ids["phase"], row)]))
    request(writer, m.StoreRunEnd(instance_id=ids["instance"], status="error", reason=HUGE))
    started(writer, "direct")
    assert record_run_end(store_uri, "direct", "error", HUGE)
    whole = "ValueError: " + "y" * (REASON_MAX - 12)
    started(writer, "whole")
    assert record_run_end(store_uri, "whole", "error", whole)

    half = REASON_MAX // 2
    cut = len(HUGE) - 2 * half
    kept = f"{HUGE[:half]}\n[... {cut:,} characters cut ...]\n{HUGE[-half:]}"
    shown = {r["instance_uid"]: r["reason"] for r in rows.runs(store_uri=store_uri)}
    assert shown == {"by-writer": kept, "direct": kept, "whole": whole}
    assert len(kept) < REASON_MAX + 50 and kept.endswith("\nthe end")
    (reload,) = rows.code_reloads("run-t", store_uri=store_uri, instance="by-writer")
    assert reload["error"] == kept


DEEP = "/" + "/".join(["d" * 100] * 40) + "/run.yml"  # 4,048 characters: about PATH_MAX
"""A path far longer than the 1,024 characters the path columns held up to revision 0008."""


def test_paths_longer_than_1024_characters_are_kept_on_every_store(
    writer: StoreWriter, store_uri: str
) -> None:
    """A run file in a directory 1,121 characters deep failed the run at its start on
    PostgreSQL (``StoreWriter: StringDataRightTruncation: value too long for type character
    varying(1024)``) while SQLite kept it; so did a brain dump or a reloaded module there."""
    start = msgspec.structs.replace(run_start("run-t", "deep", "exp-t"), file=DEEP)
    ids: dict[str, Any] = dict(request(writer, start).ids)
    ids.update(request(writer, phase_start(ids["instance"], 0, "only", "train", 1, 1)).ids)
    row = m.CodeReloadRow("muscle:attacker", 0, 0, 3, "m", DEEP, True, None, 1.5e9)
    writer.accept(m.Rows(table="code_reloads", rows=[code_reload_values(ids["phase"], row)]))
    writer.accept(m.BrainDump(agent_id=ids["agent:attacker"], tag="final", path=DEEP, dump=b"d"))

    assert len(DEEP) > 4000
    (reload,) = rows.code_reloads("run-t", store_uri=store_uri)
    (dump,) = rows.brain_states("run-t", store_uri=store_uri)
    engine = make_engine(store_uri)
    try:
        with engine.connect() as connection:
            (file,) = connection.exec_driver_sql("SELECT file FROM experiment_runs").scalars()
    finally:
        engine.dispose()
    assert (file, reload["path"], dump["path"]) == (DEEP, DEEP, DEEP)
