"""Tests of palaestra.store.query against a small store written by the StoreWriter."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from palaestra.core import messages as m
from palaestra.core.errors import StoreError
from palaestra.store import query
from palaestra.store.engine import make_engine
from palaestra.store.writer import StoreWriter

RUN = "run-q"


def request(writer: StoreWriter, message: m.Msg) -> Any:
    return asyncio.run(writer.dispatch(message))


def agent(name: str) -> m.PhaseAgent:
    return m.PhaseAgent(
        name=name, brain="pkg:Brain", muscle="pkg:Muscle", objective="pkg:Obj", config={}, seeds={}
    )


def start_instance(writer: StoreWriter, uid: str) -> int:
    message = m.StoreRunStart(
        experiment_uid="exp-q",
        run_uid=RUN,
        instance_uid=uid,
        document="uid: run-q\n",
        file="run.yml",
        seed=1,
        palaestra_version="0.1.0",
        host="box",
    )
    return request(writer, message).ids["instance"]


def start_phase(writer: StoreWriter, instance_id: int, index: int) -> dict[str, int]:
    message = m.StorePhaseStart(
        instance_id=instance_id,
        index=index,
        name=f"phase-{index}",
        mode="train" if index == 0 else "test",
        workers=1,
        episodes=1,
        config={"index": index},
        environments=[m.PhaseEnvironment(uid="env", name="pkg:Env", params={}, seeds=[1])],
        agents=[agent("a"), agent("b")],
    )
    return request(writer, message).ids


def record_phase(writer: StoreWriter, ids: dict[str, int], index: int) -> None:
    """Two steps of world states, two actions per agent, one dump per agent."""
    writer.accept(
        m.WorldStateRows(
            environment_id=ids["environment:env"],
            worker=0,
            rows=[
                (0, s, {"env.s": index * 10 + s}, {"env.a": s}, {"r": 1.0}, s == 1) for s in (0, 1)
            ],
        )
    )
    for name in ("a", "b"):
        writer.accept(
            m.MuscleActionRows(
                agent_id=ids[f"agent:{name}"],
                worker=0,
                rows=[
                    (0, s, {"env.s": s}, {"env.a": [s]}, {"r": 1.0}, None if s else 0.5, s == 1)
                    for s in (0, 1)
                ],
            )
        )
        writer.accept(
            m.BrainDump(
                agent_id=ids[f"agent:{name}"], tag="final", path=f"{name}.bin", dump=name.encode()
            )
        )
    request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Instance ``old`` (one phase, failed) and instance ``new`` (two phases, finished)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('query')}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    old = start_instance(writer, "old")
    record_phase(writer, start_phase(writer, old, 0), 0)
    request(writer, m.StoreRunEnd(instance_id=old, status="error", reason="boom"))
    new = start_instance(writer, "new")
    for index in (0, 1):
        record_phase(writer, start_phase(writer, new, index), index)
    request(writer, m.StoreRunEnd(instance_id=new, status="finished"))
    asyncio.run(writer.teardown())
    return uri


def test_runs_lists_every_instance(store: str) -> None:
    rows = query.runs(store)

    assert [(r["run_uid"], r["experiment_uid"], r["instance_uid"]) for r in rows] == [
        (RUN, "exp-q", "old"),
        (RUN, "exp-q", "new"),
    ]
    assert [(r["status"], r["reason"], r["phases"]) for r in rows] == [
        ("error", "boom", 1),
        ("finished", "", 2),
    ]
    for row in rows:
        assert row["started_at"].tzinfo is dt.UTC
        assert row["duration_s"] == (row["finished_at"] - row["started_at"]).total_seconds()
        assert row["duration_s"] >= 0


def test_phases_of_the_newest_instance_or_the_one_named(store: str) -> None:
    rows = query.phases(store, RUN)

    assert [(r["index"], r["name"], r["mode"], r["status"]) for r in rows] == [
        (0, "phase-0", "train", "finished"),
        (1, "phase-1", "test", "finished"),
    ]
    assert rows[1]["config"] == {"index": 1}
    assert [r["index"] for r in query.phases(store, RUN, instance="old")] == [0]


def test_world_states_with_filters(store: str) -> None:
    rows = query.world_states(store, RUN)

    assert [(r["phase"], r["step"], r["sensors"]) for r in rows] == [
        (0, 0, {"env.s": 0}),
        (0, 1, {"env.s": 1}),
        (1, 0, {"env.s": 10}),
        (1, 1, {"env.s": 11}),
    ]
    assert rows[1] == {
        "phase": 0,
        "environment": "env",
        "worker": 0,
        "episode": 0,
        "step": 1,
        "sensors": {"env.s": 1},
        "setpoints": {"env.a": 1},
        "rewards": {"r": 1.0},
        "done": True,
    }
    assert [r["step"] for r in query.world_states(store, RUN, phase=1)] == [0, 1]
    assert query.world_states(store, RUN, environment="other") == []
    assert len(query.world_states(store, RUN, instance="old")) == 2


def test_muscle_actions_with_filters(store: str) -> None:
    assert len(query.muscle_actions(store, RUN)) == 8
    rows = query.muscle_actions(store, RUN, phase=1, agent="b")

    assert rows == [
        {
            "phase": 1,
            "agent": "b",
            "worker": 0,
            "episode": 0,
            "step": s,
            "sensor_readings": {"env.s": s},
            "actuator_setpoints": {"env.a": [s]},
            "rewards": {"r": 1.0},
            "objective": None if s else 0.5,
            "done": s == 1,
        }
        for s in (0, 1)
    ]
    assert len(query.muscle_actions(store, RUN, agent="a", instance="old")) == 2


def test_brain_states_without_and_with_dumps(store: str) -> None:
    rows = query.brain_states(store, RUN)

    assert [(r["phase"], r["agent"], r["tag"], r["path"]) for r in rows] == [
        (0, "a", "final", "a.bin"),
        (0, "b", "final", "b.bin"),
        (1, "a", "final", "a.bin"),
        (1, "b", "final", "b.bin"),
    ]
    assert "dump" not in rows[0]
    dumps = query.brain_states(store, RUN, agent="b", with_dump=True)
    assert [(r["phase"], r["dump"]) for r in dumps] == [(0, b"b"), (1, b"b")]


def test_an_unknown_run_or_instance_has_no_rows(store: str) -> None:
    assert query.phases(store, "nope") == []
    assert query.muscle_actions(store, RUN, instance="nope") == []


def test_filters_are_sent_to_the_database(store: str) -> None:
    engine = make_engine(store)
    sent: list[tuple[str, Any]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def record(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        sent.append((statement, params))

    try:
        rows = query.muscle_actions(engine, RUN, phase=0, agent="a")
    finally:
        engine.dispose()

    assert len(rows) == 2
    ((statement, params),) = sent
    assert "WHERE" in statement
    assert "agents.name = ?" in statement
    assert "a" in params and 0 in params


def test_reading_a_missing_store_fails_without_creating_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such store"):
        query.runs(f"sqlite:///{tmp_path}/missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_reading_a_store_without_schema_raises_store_error(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/empty.db"
    make_engine(uri).dispose()

    with pytest.raises(StoreError, match="cannot read"):
        query.runs(uri)
