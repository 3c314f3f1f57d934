"""Tests of the StoreWriter against a real SQLite file, without processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zmq
import zmq.asyncio
from sqlalchemy import text

from palaestra.core.description.name_rules import path_part
from palaestra.core.errors import EXIT_STORE_UNUSABLE, StoreError
from palaestra.core.supervision.esm import State
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    episode_values,
    muscle_action_values,
    statistics_values,
    world_state_values,
)
from palaestra.core.wire.transport import endpoint_for, make_run_dir, remove_run_dir
from palaestra.store import writer as writer_module
from palaestra.store.engine import make_engine
from palaestra.store.replay_source import find_replay
from palaestra.store.writer import YIELD_ROWS, StoreWriter
from tests.conftest import actions_message, world_message

RUN_UID = "run-1"


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def store_uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/not-yet/palaestra.db"


@pytest.fixture
def writer(store_uri: str) -> Iterator[StoreWriter]:
    writer = StoreWriter("store", store_uri, batch_rows=100)
    writer.open()
    yield writer
    run(writer.teardown())


def select_all(writer: StoreWriter, sql: str, **params: Any) -> list[Any]:
    """What a reader of the store finds (the writer's commits only)."""
    engine = make_engine(writer.store_uri)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(sql), params))
    finally:
        engine.dispose()


def count(writer: StoreWriter, table: str) -> int:
    return select_all(writer, f"SELECT count(*) FROM {table}")[0][0]


def run_start(instance_uid: str = "instance-1", document: str = "uid: run-1\n") -> m.StoreRunStart:
    return m.StoreRunStart(
        experiment_uid="experiment-1",
        run_uid=RUN_UID,
        instance_uid=instance_uid,
        document=document,
        file="run.yml",
        seed=42,
        palaestra_version="0.1.0",
        host="box",
    )


def phase_start(instance_id: int, index: int = 0) -> m.StorePhaseStart:
    return m.StorePhaseStart(
        instance_id=instance_id,
        index=index,
        name=f"phase-{index}",
        mode="train",
        workers=2,
        episodes=3,
        config={"episodes": 3, "nested": {"x": [1, 2]}},
        environments=[
            m.PhaseEnvironment(uid="env", name="pkg:Env", params={"size": 4}, seeds=[7, 8])
        ],
        agents=[
            m.PhaseAgent(
                name="attacker",
                brain="pkg:Brain",
                muscle="pkg:Muscle",
                objective="pkg:Objective",
                config={"lr": 0.1},
                seeds={"brain": 1, "muscles": [2, 3]},
            ),
            m.PhaseAgent(
                name="defender",
                brain="pkg:Brain",
                muscle="pkg:Muscle",
                objective="pkg:Objective",
                config={},
                seeds={},
                loaded_from={"brain_state_id": 1},
            ),
        ],
    )


def start(writer: StoreWriter, instance_uid: str = "instance-1") -> dict[str, int]:
    """Record a run instance with one phase; returns all ids."""
    ids = dict(run(writer.dispatch(run_start(instance_uid))).ids)
    ids.update(run(writer.dispatch(phase_start(ids["instance"]))).ids)
    return ids


def action_rows(agent_id: int, steps: range, worker: int = 0) -> m.Rows:
    """What a Muscle sends: its rows shaped for the writer."""
    return actions_message(
        agent_id,
        worker,
        [
            m.MuscleActionRow(
                0, s, {"env.0": [s, 0.5]}, {"env.1": s % 2}, {"r": 1.5}, None if s else 0.25, False
            )
            for s in steps
        ],
    )


def world_rows(environment_id: int, steps: range) -> m.Rows:
    """What an environment sends: its rows shaped for the writer."""
    return world_message(
        environment_id,
        1,
        [m.WorldStateRow(2, s, {"env.0": s}, {"env.1": [1, 2]}, {"r": -1}, s == 9) for s in steps],
    )


# --- metadata ------------------------------------------------------------------------------


def test_run_start_returns_ids_and_records_run(writer: StoreWriter) -> None:
    reply = run(writer.dispatch(run_start()))

    assert isinstance(reply, m.StoreIds)
    assert set(reply.ids) == {"experiment", "run", "instance"}
    ((uid, status, reason, finished, version, host),) = select_all(
        writer,
        "SELECT uid, status, reason, finished_at, palaestra_version, host "
        "FROM experiment_run_instances",
    )
    assert (uid, status, reason, finished, version, host) == (
        "instance-1",
        "running",
        "",
        None,
        "0.1.0",
        "box",
    )


def test_run_start_again_keeps_run_and_updates_its_document(writer: StoreWriter) -> None:
    first = run(writer.dispatch(run_start("i-1", document="old"))).ids
    second = run(writer.dispatch(run_start("i-2", document="new"))).ids

    assert second["experiment"] == first["experiment"]
    assert second["run"] == first["run"]
    assert second["instance"] != first["instance"]
    assert select_all(writer, "SELECT document, seed FROM experiment_runs") == [("new", 42)]


def test_run_start_again_with_another_seed_and_file_records_them(writer: StoreWriter) -> None:
    """The run file edited (its seed) and started again from elsewhere: the run's record says
    what its newest instance ran, not the document of one and the seed of another."""
    run(writer.dispatch(run_start("i-1", document="uid: run-1\nseed: 42\n")))
    edited = msgspec.structs.replace(
        run_start("i-2", document="uid: run-1\nseed: 7\n"), seed=7, file="other/run.yml"
    )
    run(writer.dispatch(edited))

    assert select_all(writer, "SELECT document, seed, file FROM experiment_runs") == [
        ("uid: run-1\nseed: 7\n", 7, "other/run.yml")
    ]


def test_run_start_again_writes_the_run_only_when_it_changed(writer: StoreWriter) -> None:
    """(An UPDATE locks the run's row on PostgreSQL: instances of one run starting together
    would wait for each other.)"""
    statements: list[str] = []

    run(writer.dispatch(run_start("i-1", document="same")))
    assert writer.store is not None
    writer.store.connection.set_trace_callback(statements.append)
    run(writer.dispatch(run_start("i-2", document="same")))
    assert not [s for s in statements if s.startswith("UPDATE experiment_runs")]
    run(writer.dispatch(run_start("i-3", document="changed")))
    assert [s for s in statements if s.startswith("UPDATE experiment_runs")]
    writer.store.connection.set_trace_callback(None)
    assert select_all(writer, "SELECT document FROM experiment_runs") == [("changed",)]


def test_phase_start_records_environments_and_agents(writer: StoreWriter) -> None:
    ids = start(writer)

    assert {"phase", "environment:env", "agent:attacker", "agent:defender"} <= set(ids)
    ((status, config, finished),) = select_all(
        writer, "SELECT status, config, finished_at FROM experiment_run_phases"
    )
    assert (status, config, finished) == ("running", '{"episodes":3,"nested":{"x":[1,2]}}', None)
    assert select_all(writer, "SELECT id, uid, name, params, seeds FROM environments") == [
        (ids["environment:env"], "env", "pkg:Env", '{"size":4}', "[7,8]")
    ]
    agents = select_all(writer, "SELECT name, config, seeds, loaded_from FROM agents ORDER BY id")
    assert agents == [
        ("attacker", '{"lr":0.1}', '{"brain":1,"muscles":[2,3]}', None),
        ("defender", "{}", "{}", '{"brain_state_id":1}'),
    ]


def test_phase_end_flushes_and_marks_the_phase(writer: StoreWriter) -> None:
    ids = start(writer)
    writer.accept(action_rows(ids["agent:attacker"], range(5)))

    reply = run(writer.dispatch(m.StorePhaseEnd(phase_id=ids["phase"], status="finished")))

    assert isinstance(reply, m.StoreAck)
    assert count(writer, "muscle_actions") == 5
    ((status, finished),) = select_all(
        writer, "SELECT status, finished_at FROM experiment_run_phases"
    )
    assert status == "finished"
    assert finished is not None


def test_run_end_marks_instance_and_its_running_phases(writer: StoreWriter) -> None:
    ids = start(writer)
    run(writer.dispatch(m.StorePhaseEnd(phase_id=ids["phase"], status="finished")))
    running = run(writer.dispatch(phase_start(ids["instance"], index=1))).ids["phase"]

    reply = run(
        writer.dispatch(m.StoreRunEnd(instance_id=ids["instance"], status="error", reason="boom"))
    )

    assert isinstance(reply, m.StoreAck)
    assert select_all(writer, "SELECT status, reason FROM experiment_run_instances") == [
        ("error", "boom")
    ]
    phases = select_all(
        writer, "SELECT id, status, finished_at IS NOT NULL FROM experiment_run_phases ORDER BY id"
    )
    assert phases == [(ids["phase"], "finished", 1), (running, "error", 1)]


def test_the_end_of_an_unknown_phase_or_instance_is_refused(writer: StoreWriter) -> None:
    ids = start(writer)
    with pytest.raises(ValueError, match="no phase with id 99"):
        run(writer.dispatch(m.StorePhaseEnd(phase_id=99, status="finished")))
    with pytest.raises(ValueError, match="no run instance with id 99"):
        run(writer.dispatch(m.StoreRunEnd(instance_id=99, status="error", reason="boom")))
    assert select_all(writer, "SELECT status FROM experiment_run_instances") == [("running",)]
    assert select_all(writer, "SELECT status FROM experiment_run_phases") == [("running",)]
    assert ids["instance"] != 99


def test_an_unknown_status_is_rejected(writer: StoreWriter) -> None:
    ids = start(writer)
    with pytest.raises(ValueError, match="done"):
        run(writer.dispatch(m.StorePhaseEnd(phase_id=ids["phase"], status="done")))


# --- records and batching ------------------------------------------------------------------


def test_rows_are_buffered_until_flushed(writer: StoreWriter) -> None:
    ids = start(writer)
    writer.accept(action_rows(ids["agent:attacker"], range(50)))
    writer.accept(world_rows(ids["environment:env"], range(10)))

    assert count(writer, "muscle_actions") == 0
    assert count(writer, "world_states") == 0

    writer.flush()

    assert count(writer, "muscle_actions") == 50
    first = select_all(
        writer,
        "SELECT agent_id, worker, episode, step, sensor_readings, actuator_setpoints, rewards, "
        "objective, done FROM muscle_actions ORDER BY id LIMIT 2",
    )
    assert first == [
        (ids["agent:attacker"], 0, 0, 0, '{"env.0":[0,0.5]}', '{"env.1":0}', '{"r":1.5}', 0.25, 0),
        (ids["agent:attacker"], 0, 0, 1, '{"env.0":[1,0.5]}', '{"env.1":1}', '{"r":1.5}', None, 0),
    ]
    last = select_all(
        writer,
        "SELECT environment_id, worker, episode, step, sensors, setpoints, rewards, done "
        "FROM world_states ORDER BY id DESC LIMIT 1",
    )
    assert last == [
        (ids["environment:env"], 1, 2, 9, '{"env.0":9}', '{"env.1":[1,2]}', '{"r":-1}', 1)
    ]


def test_statistics_and_simtimes_are_buffered_and_stored(writer: StoreWriter) -> None:
    ids = start(writer)
    row = m.WorldStateRow(0, 1, {}, {}, {}, False, {"simtime_ticks": 4, "simtime_timestamp": None})
    writer.accept(world_message(ids["environment:env"], 0, [row]))
    writer.accept(world_rows(ids["environment:env"], range(1)))  # no simtime
    stats = [
        m.StatisticsRow("brain", 1, 0, 5, {"loss": 0.5, "by_update": {"1": [1.0, 2.0]}}),
        m.StatisticsRow("muscle", 0, 0, 6, {"acted_with": 3}),
    ]
    shaped = [statistics_values(ids["agent:attacker"], row) for row in stats]
    writer.accept(m.decode(m.encode(m.Rows(table="statistics", rows=shaped))))
    assert count(writer, "statistics") == 0

    writer.flush()

    assert select_all(writer, "SELECT simtime FROM world_states ORDER BY id") == [
        ('{"simtime_ticks":4,"simtime_timestamp":null}',),
        (None,),
    ]
    assert select_all(
        writer, "SELECT agent_id, source, worker, episode, step, statistics FROM statistics"
    ) == [
        (ids["agent:attacker"], "brain", 1, 0, 5, '{"loss":0.5,"by_update":{"1":[1.0,2.0]}}'),
        (ids["agent:attacker"], "muscle", 0, 0, 6, '{"acted_with":3}'),
    ]


def test_a_full_buffer_is_written_without_a_flush(writer: StoreWriter) -> None:
    agent = start(writer)["agent:attacker"]
    writer.accept(action_rows(agent, range(99)))
    assert count(writer, "muscle_actions") == 0

    writer.accept(action_rows(agent, range(99, 101)))

    assert count(writer, "muscle_actions") == 101
    assert writer.buffers == {table: [] for table in writer.buffers}


def test_a_batch_written_while_the_run_steps_yields_the_cpu_between_its_parts(
    writer: StoreWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full buffer's rows go in in parts of YIELD_ROWS, the CPU yielded between them (to a
    process of the run that a step woke), in one transaction; a flush that a request waits for
    (StoreFlush, a phase's end) does not yield."""
    ids = start(writer)
    agent = ids["agent:attacker"]
    store = writer.store
    assert store is not None
    inserted: list[int] = []  # (the rows in the writer's own transaction at each yield)

    def yielded() -> None:
        inserted.append(store.execute("SELECT count(*) FROM muscle_actions").fetchone()[0])

    monkeypatch.setattr(writer_module, "_yield", yielded)
    writer.accept(action_rows(agent, range(YIELD_ROWS * 2 + 7)))  # (batch_rows: 100)

    assert inserted == [YIELD_ROWS, YIELD_ROWS * 2]
    assert count(writer, "muscle_actions") == YIELD_ROWS * 2 + 7  # (committed)
    steps = select_all(writer, "SELECT step FROM muscle_actions ORDER BY id")
    assert [step for (step,) in steps] == list(range(YIELD_ROWS * 2 + 7))

    writer.accept(action_rows(agent, range(300, 300 + YIELD_ROWS + 1)))  # (buffered)
    assert isinstance(run(writer.dispatch(m.StoreFlush(producers=[]))), m.StoreAck)
    assert inserted == [YIELD_ROWS, YIELD_ROWS * 2]  # (not again)
    assert count(writer, "muscle_actions") == YIELD_ROWS * 3 + 8

    writer.accept(action_rows(agent, range(400, 400 + YIELD_ROWS + 1)))
    ended = m.StorePhaseEnd(phase_id=ids["phase"], status="finished")
    assert isinstance(run(writer.dispatch(ended)), m.StoreAck)
    assert inserted == [YIELD_ROWS, YIELD_ROWS * 2]  # (nor for a phase's end)
    assert count(writer, "muscle_actions") == YIELD_ROWS * 4 + 9


def test_teardown_writes_what_is_buffered(store_uri: str) -> None:
    writer = StoreWriter("store", store_uri)
    writer.open()
    agent = start(writer)["agent:attacker"]
    writer.accept(action_rows(agent, range(3)))

    run(writer.teardown())

    engine = make_engine(store_uri)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM muscle_actions")).scalar() == 3
    engine.dispose()


def test_a_message_that_is_no_record_is_rejected(writer: StoreWriter) -> None:
    with pytest.raises(TypeError, match="StoreAck"):
        writer.accept(m.StoreAck())


def test_store_flush_waits_for_every_named_producer(writer: StoreWriter) -> None:
    agent = start(writer)["agent:attacker"]

    async def scenario() -> None:
        flush = asyncio.create_task(writer.dispatch(m.StoreFlush(producers=["m-0", "m-1"])))
        writer.accept(action_rows(agent, range(10)))
        writer.accept(m.ProducerClosed(producer="m-0"))
        await asyncio.sleep(0)  # let the flush run up to its wait
        assert not flush.done()

        writer.accept(m.ProducerClosed(producer="m-1"))
        reply = await asyncio.wait_for(flush, 5)

        assert isinstance(reply, m.StoreAck)
        assert count(writer, "muscle_actions") == 10

    run(scenario())


def test_store_flush_of_closed_producers_returns_at_once(writer: StoreWriter) -> None:
    writer.accept(m.ProducerClosed(producer="m-0"))
    assert isinstance(run(writer.dispatch(m.StoreFlush(producers=["m-0"]))), m.StoreAck)
    assert isinstance(run(writer.dispatch(m.StoreFlush(producers=[]))), m.StoreAck)


def test_a_flush_consumes_the_markers_so_a_later_phase_can_reuse_names(
    writer: StoreWriter,
) -> None:
    async def scenario() -> None:
        writer.accept(m.ProducerClosed(producer="Muscle-a-0"))
        await writer.dispatch(m.StoreFlush(producers=["Muscle-a-0"]))
        # the next phase's producer of the same name has not closed yet: the flush must wait
        flush = asyncio.create_task(writer.dispatch(m.StoreFlush(producers=["Muscle-a-0"])))
        await asyncio.sleep(0)
        assert not flush.done()
        writer.accept(m.ProducerClosed(producer="Muscle-a-0"))
        assert isinstance(await asyncio.wait_for(flush, 5), m.StoreAck)

    run(scenario())


# --- brain dumps ---------------------------------------------------------------------------


def dump(agent_id: int, data: bytes, tag: str = "final") -> m.BrainDump:
    return m.BrainDump(agent_id=agent_id, tag=tag, path=f"/dumps/{agent_id}", dump=data)


def find(writer: StoreWriter, agent: str = "attacker", phase: int = 0) -> m.StoreDump:
    return run(writer.dispatch(m.StoreFindDump(run_uid=RUN_UID, agent=agent, phase=phase)))


def test_find_dump_returns_the_newest_dump_of_the_newest_instance(writer: StoreWriter) -> None:
    old = start(writer, "instance-1")["agent:attacker"]
    writer.accept(dump(old, b"old"))
    new = start(writer, "instance-2")["agent:attacker"]
    writer.accept(dump(new, b"first"))
    writer.accept(dump(new, b"second"))

    found = find(writer)

    newest_id = select_all(writer, "SELECT max(id) FROM brain_states")[0][0]
    assert found == m.StoreDump(brain_state_id=newest_id, dumps={"final": b"second"})


def test_find_dump_of_its_own_run_comes_from_the_asking_instance(writer: StoreWriter) -> None:
    """Two instances of one run at once: each phase loads its own instance's dumps, not the
    newest instance's; a resumed instance, from the instance it continues where it skipped
    the phase."""
    old = start(writer, "instance-1")
    writer.accept(dump(old["agent:attacker"], b"old"))
    new = start(writer, "instance-2")
    writer.accept(dump(new["agent:attacker"], b"new"))
    resumed = run(
        writer.dispatch(
            msgspec.structs.replace(run_start("instance-3"), resumed_from_id=old["instance"])
        )
    ).ids["instance"]

    def asked(instance: int, phase: int = 0) -> dict[str, bytes]:
        message = m.StoreFindDump(run_uid=RUN_UID, agent="attacker", phase=phase)
        found = run(writer.dispatch(msgspec.structs.replace(message, instance_id=instance)))
        return found.dumps

    assert asked(old["instance"]) == {"final": b"old"}
    assert asked(new["instance"]) == {"final": b"new"}
    assert asked(resumed) == {"final": b"old"}  # (it continues instance-1; skipped phase 0)
    assert asked(old["instance"], phase=1) == {}
    assert find(writer).dumps == {"final": b"new"}  # (another run's load: its newest)


def test_replay_of_its_own_run_reads_the_asking_instance_and_those_it_continues(
    writer: StoreWriter, store_uri: str
) -> None:
    """An agent's ``replay`` of its own run's earlier phase: the running instance's steps
    (and, resumed, those of the instance it continues), not those of another instance of the
    run that runs at the same time, the newest."""
    old = start(writer, "instance-1")
    writer.accept(action_rows(old["agent:attacker"], range(3)))
    resumed = msgspec.structs.replace(run_start("instance-2"), resumed_from_id=old["instance"])
    run(writer.dispatch(resumed))
    new = start(writer, "instance-3")
    writer.accept(action_rows(new["agent:attacker"], range(5)))
    writer.flush()
    engine = make_engine(store_uri)
    try:

        def steps(instance: str | None, continued: bool = True) -> int | str:
            request = m.StoreFindReplay(
                run_uid=RUN_UID, agent="attacker", phase=0, instance=instance, continued=continued
            )
            found = find_replay(engine, request)
            return found.problem or sum(len(s.rows) for s in found.steps)

        assert steps("instance-1") == 3
        assert steps(None, continued=False) == 5  # (another run's replay: its newest)
        # instance-2 continues instance-1, which played phase 0: its view has the agent there
        # (and the steps of the episodes instance-1 completed: here none, no episode ended)
        continuing = steps("instance-2")
        assert continuing == "agent 'attacker' in phase 0 of run 'run-1' recorded no steps"
        assert str(steps("instance-2", continued=False)).startswith("run 'run-1' has no phase 0")
    finally:
        engine.dispose()


def test_find_dump_returns_the_newest_dump_of_each_tag(writer: StoreWriter) -> None:
    """harl stores an actor, a critic and a replay buffer at every episode's end: the next
    phase gets the newest of each, by tag (a tag like a path by its safe form)."""
    agent = start(writer)["agent:attacker"]
    for data, tag in [
        (b"actor 1", "actor"),
        (b"critic 1", "critic"),
        (b"untagged", ""),
        (b"actor 2", "actor"),
        (b"odd", "../odd tag"),
    ]:
        writer.accept(dump(agent, data, tag))

    found = find(writer)

    newest_id = select_all(writer, "SELECT max(id) FROM brain_states")[0][0]
    assert found.brain_state_id == newest_id
    assert found.dumps == {
        "actor": b"actor 2",
        "critic": b"critic 1",
        "": b"untagged",
        path_part("../odd tag"): b"odd",
    }


def test_find_dump_uses_the_newest_instance_that_has_the_agent(writer: StoreWriter) -> None:
    agent = start(writer, "instance-1")["agent:attacker"]
    writer.accept(dump(agent, b"only"))
    run(writer.dispatch(run_start("instance-2")))  # no phases at all

    assert find(writer).dumps == {"final": b"only"}


def test_find_dump_answers_none_when_there_is_none(writer: StoreWriter) -> None:
    agent = start(writer)["agent:attacker"]
    writer.accept(dump(agent, b"x"))
    none = m.StoreDump(brain_state_id=None, dumps={})

    assert find(writer, agent="defender") == none
    assert find(writer, agent="nobody") == none
    assert find(writer, phase=1) == none
    assert (
        run(writer.dispatch(m.StoreFindDump(run_uid="other", agent="attacker", phase=0))) == none
    )


# --- the connection ------------------------------------------------------------------------


def test_sqlite_store_uses_wal_and_foreign_keys(writer: StoreWriter) -> None:
    assert writer.store is not None
    said = writer.store.connection.execute
    assert said("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert said("PRAGMA foreign_keys").fetchall() == [(1,)]
    assert said("PRAGMA synchronous").fetchall() == [(1,)]  # NORMAL
    assert said("PRAGMA busy_timeout").fetchone()[0] > 0


@pytest.mark.parametrize(
    "uri",
    ["no such uri", "nosuchdialect://host/db", "postgresql+nosuchdriver://user:secret@host/db"],
)
def test_a_bad_uri_raises_store_error_naming_it(uri: str) -> None:
    with pytest.raises(StoreError) as caught:
        StoreWriter("store", uri).open()

    assert caught.value.exit_code == EXIT_STORE_UNUSABLE
    assert "secret" not in str(caught.value)
    assert uri.replace("secret", "***") in str(caught.value)


def test_an_unwritable_store_path_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    uri = f"sqlite:///{tmp_path}/file/palaestra.db"

    with pytest.raises(StoreError, match="cannot create the directory"):
        make_engine(uri)


def test_a_file_that_is_no_database_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"this is not a database" * 100)

    with pytest.raises(StoreError, match="junk.db"):
        StoreWriter("store", f"sqlite:///{tmp_path}/junk.db").open()


# --- the record socket, for real -------------------------------------------------------------


class FakeRuntime:
    """Just what StoreWriter.setup uses of a Runtime: ``bind`` and ``start_task``."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.ctx = zmq.asyncio.Context()
        self.tasks: list[asyncio.Task[Any]] = []

    def bind(self, kind: int, role: str) -> tuple[zmq.asyncio.Socket, str]:
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        endpoint = endpoint_for(self.run_dir, f"store-{role}")
        sock.bind(endpoint)
        return sock, endpoint

    def start_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.append(task)
        return task


@pytest.mark.integration
def test_rows_pushed_to_the_socket_are_stored(store_uri: str) -> None:
    rows, batch = 10_000, 100
    run_dir = make_run_dir()
    runtime = FakeRuntime(run_dir)
    writer = StoreWriter("store", store_uri)

    async def scenario() -> float:
        endpoints = await writer.setup(runtime)
        agent = (
            await writer.dispatch(
                phase_start((await writer.dispatch(run_start())).ids["instance"])
            )
        ).ids["agent:attacker"]
        push = runtime.ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(endpoints["store"])
        try:
            began = time.perf_counter()
            for first in range(0, rows, batch):
                await push.send(m.encode(action_rows(agent, range(first, first + batch))))
            await push.send(m.encode(m.ProducerClosed(producer="muscle-0")))
            reply = await asyncio.wait_for(
                writer.dispatch(m.StoreFlush(producers=["muscle-0"])), 10
            )
            elapsed = time.perf_counter() - began
        finally:
            push.close(linger=0)
        assert isinstance(reply, m.StoreAck)
        assert count(writer, "muscle_actions") == rows
        assert not any(task.done() for task in runtime.tasks)  # the reader is alive
        await writer.teardown()
        return rows / elapsed

    try:
        rate = run(scenario())
    finally:
        runtime.ctx.destroy(linger=0)
        remove_run_dir(run_dir)
    print(f"StoreWriter: {rate:,.0f} muscle_actions rows/s over the PULL socket")


def test_buffered_rows_are_committed_when_the_socket_idles(
    writer: StoreWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = start(writer)["agent:attacker"]
    writer.accept(action_rows(agent, range(5)))
    monkeypatch.setattr("palaestra.store.writer.IDLE_FLUSH_MS", 1)
    flushed = asyncio.Event()
    flush = writer.flush

    def flush_and_tell(yielding: bool = False) -> None:
        flush(yielding)
        flushed.set()

    monkeypatch.setattr(writer, "flush", flush_and_tell)

    async def scenario() -> None:
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.PULL)
        sock.setsockopt(zmq.LINGER, 0)
        reader = asyncio.create_task(writer.read(sock))
        try:
            await asyncio.wait_for(flushed.wait(), 5)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            sock.close()
            ctx.term()

    run(scenario())
    assert count(writer, "muscle_actions") == 5


def test_a_failing_reader_fails_a_waiting_flush(writer: StoreWriter) -> None:
    async def scenario() -> None:
        ctx = zmq.asyncio.Context()
        pull = ctx.socket(zmq.PULL)
        push = ctx.socket(zmq.PUSH)
        for sock in (pull, push):
            sock.setsockopt(zmq.LINGER, 0)
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        push.connect(f"tcp://127.0.0.1:{port}")
        try:
            flush = asyncio.create_task(writer.dispatch(m.StoreFlush(producers=["m-0"])))
            reader = asyncio.create_task(writer.read(pull))
            await push.send(m.encode(m.StoreAck()))  # not a record: the reader fails
            with pytest.raises(RuntimeError, match="record reader failed"):
                await asyncio.wait_for(flush, 5)
            with pytest.raises(TypeError):
                await reader
        finally:
            push.close()
            pull.close()
            ctx.term()

    run(scenario())


def test_a_full_store_raises_store_error_naming_it(writer: StoreWriter, store_uri: str) -> None:
    """SQLite's ``max_page_count`` makes the file full (SQLITE_FULL, as a full disk does)."""
    ids = start(writer)
    assert writer.store is not None
    pages = select_all(writer, "PRAGMA page_count")[0][0]
    writer.store.connection.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(StoreError) as caught:  # (more rows than the pages' free space holds)
        writer.accept(action_rows(ids["agent:attacker"], range(999)))
        writer.flush()
    message = caught.value.format_message()
    assert caught.value.exit_code == EXIT_STORE_UNUSABLE
    assert store_uri.removeprefix("sqlite:///") in message
    assert "writing 999 rows into muscle_actions failed: database or disk is full" in message
    assert "Its disk is full: free space on it" in message
    # space again: the failed transaction was rolled back, the next one writes
    writer.store.connection.execute("PRAGMA max_page_count=1073741823")
    writer.accept(action_rows(ids["agent:attacker"], range(3)))
    writer.flush()
    assert count(writer, "muscle_actions") == 3


@pytest.mark.integration
def test_the_end_of_a_run_is_recorded_after_the_rows_queued_before_it(store_uri: str) -> None:
    """Rows on the record socket, not yet read when the end of the run is asked for (the
    producers stopped after a failure elsewhere): stored before the end is recorded."""
    run_dir = make_run_dir()
    runtime = FakeRuntime(run_dir)
    writer = StoreWriter("store", store_uri)

    async def scenario() -> None:
        endpoints = await writer.setup(runtime)
        instance = (await writer.dispatch(run_start())).ids["instance"]
        agent = (await writer.dispatch(phase_start(instance))).ids["agent:attacker"]
        assert writer._reader is not None and writer._socket is not None
        writer._reader.cancel()  # the reader is busy elsewhere: nothing is read meanwhile
        with contextlib.suppress(asyncio.CancelledError):
            await writer._reader
        push = runtime.ctx.socket(zmq.PUSH)
        push.connect(endpoints["store"])
        try:
            await push.send(m.encode(action_rows(agent, range(50))))
            assert await writer._socket.poll(5000)  # queued at the writer, unread
            await writer.dispatch(m.StoreRunEnd(instance_id=instance, status="error"))
        finally:
            push.close(linger=0)
        assert count(writer, "muscle_actions") == 50
        await writer.teardown()

    try:
        run(scenario())
    finally:
        runtime.ctx.destroy(linger=0)
        remove_run_dir(run_dir)


# --- episodes, ends and periodic dumps -------------------------------------------------------


def test_episode_rows_are_buffered_and_written_with_their_times(writer: StoreWriter) -> None:
    ids = start(writer)
    ended = [
        m.EpisodeEnded(
            phase=0,
            worker=w,
            episode=e,
            started_at=1_700_000_000.0 + e,
            ended_at=1_700_000_000.5 + e,
            steps=3 + e,
            terminated=e == 0,
            truncated=e == 1,
            rewards={"attacker": 1.5 * e},
        )
        for w in (0, 1)
        for e in (0, 1)
    ]
    shaped = [episode_values(ids["phase"], row) for row in ended]
    writer.accept(m.decode(m.encode(m.Rows(table="episodes", rows=shaped))))
    assert select_all(writer, "select count(*) from episodes") == [(0,)]  # buffered
    writer.flush()
    found = select_all(
        writer,
        "select experiment_run_phase_id, worker, episode, steps, terminated, truncated, rewards"
        " from episodes order by worker, episode",
    )
    assert [(*row[:4], bool(row[4]), bool(row[5]), json.loads(row[6])) for row in found] == [
        (
            ids["phase"],
            e.worker,
            e.episode,
            e.steps,
            e.terminated,
            e.truncated,
            e.rewards,
        )
        for e in ended
    ]
    ((started, ended_at),) = select_all(
        writer, "select started_at, ended_at from episodes where worker = 1 and episode = 1"
    )
    assert str(started).startswith("2023-11-14 22:13:21") and str(ended_at).endswith(".500000")


def test_step_rows_keep_terminated_and_truncated(writer: StoreWriter) -> None:
    ids = start(writer)
    world = m.WorldStateRow(0, 1, {}, {}, {}, True, None, False, True)
    action = m.MuscleActionRow(0, 0, {}, {}, {"r": 1}, 0.0, True, True, False)
    writer.accept(world_message(ids["environment:env"], 0, [world]))
    writer.accept(actions_message(ids["agent:attacker"], 0, [action]))
    writer.flush()
    assert select_all(writer, "select terminated, truncated from world_states") == [(0, 1)]
    assert select_all(writer, "select terminated, truncated from muscle_actions") == [(1, 0)]


def test_a_periodic_dump_leaves_the_newest_of_its_tag(writer: StoreWriter) -> None:
    ids = start(writer)
    agent, other = ids["agent:attacker"], ids["agent:defender"]
    writer.accept(m.BrainDump(agent_id=other, tag="", path="", dump=b"other", keep=1))
    for i in range(5):
        writer.accept(m.BrainDump(agent_id=agent, tag="", path="", dump=b"%d" % i, keep=2))
        writer.accept(m.BrainDump(agent_id=agent, tag="t", path="", dump=b"t%d" % i, keep=3))
    writer.accept(m.BrainDump(agent_id=agent, tag="", path="", dump=b"final"))
    kept = select_all(writer, "select agent_id, tag, dump from brain_states order by id")
    assert kept == [
        (other, "", b"other"),
        (agent, "t", b"t2"),
        (agent, "", b"3"),
        (agent, "t", b"t3"),
        (agent, "", b"4"),
        (agent, "t", b"t4"),
        (agent, "", b"final"),
    ]


def test_ready_rows_are_inserted_as_they_came_through_the_socket_encoding(
    writer: StoreWriter,
) -> None:
    """Rows of the per-step tables (what producers send): tuples with JSON as text, through
    msgpack and back, stored as they are; an unknown table is refused."""
    ids = start(writer)
    env_id, agent_id = ids["environment:env"], ids["agent:attacker"]
    world = m.WorldStateRow(1, 4, {"env.0": float("inf")}, {"env.1": 1}, {"r": 0.5}, True)
    action = m.MuscleActionRow(1, 3, {"env.0": 0.5}, {"env.1": 1}, {"r": 0.5}, None, True, True)
    for message in (
        m.Rows(table="world_states", rows=[world_state_values(env_id, 6, world)]),
        m.Rows(table="muscle_actions", rows=[muscle_action_values(agent_id, 6, action)]),
    ):
        data = m.encode(message)
        writer.accept(m.decode(data), len(data))
    writer.flush()

    assert select_all(
        writer, "SELECT environment_id, worker, episode, step, sensors, simtime FROM world_states"
    ) == [(env_id, 6, 1, 4, '{"env.0":"inf"}', None)]
    assert select_all(
        writer, "SELECT agent_id, worker, step, reward, objective, terminated FROM muscle_actions"
    ) == [(agent_id, 6, 3, 0.5, None, 1)]
    with pytest.raises(TypeError, match="rows of table 'nope'"):
        writer.accept(m.Rows(table="nope", rows=[]))


def test_a_lost_postgresql_connection_says_so_and_what_to_do(pg_uri: str) -> None:
    """The server closes the writer's connection (as a restart or an administrator does)."""
    import psycopg
    from sqlalchemy.engine import make_url

    writer = StoreWriter("store", pg_uri, batch_rows=100)
    writer.open()
    try:
        ids = start(writer)
        url = make_url(pg_uri)
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True) as admin:
            ended = admin.execute(
                "select count(pg_terminate_backend(pid)) from pg_stat_activity "
                "where datname = current_database() and pid <> pg_backend_pid()"
            ).fetchone()
        assert ended is not None and ended[0] >= 1  # the writer's pooled connection
        writer.accept(action_rows(ids["agent:attacker"], range(10)))
        with pytest.raises(StoreError) as caught:
            writer.flush()
        message = caught.value.format_message()
        assert caught.value.exit_code == EXIT_STORE_UNUSABLE
        assert f"store {url.render_as_string(hide_password=True)}" in message
        assert "The connection to the database server was lost" in message
        assert "experiment-resume" in message and "Free space" not in message
        # the server is back: the next write opens a new connection (the heartbeat, say)
        writer.accept(action_rows(ids["agent:attacker"], range(10, 13)))
        writer.flush()
        assert count(writer, "muscle_actions") == 3
    finally:
        run(writer.teardown())


@pytest.mark.parametrize(
    ("cause", "advice"),
    [
        (OSError(28, "No space left on device"), "Its disk is full"),
        (Exception("could not extend file base/1/2: No space left on device"), "disk is full"),
        (Exception("attempt to write a readonly database"), "cannot be written"),
        (Exception("database is locked"), "holds a lock"),
        (Exception("server closed the connection unexpectedly"), "connection to the database"),
        (Exception("something else"), "See that the store works"),
    ],
)
def test_store_advice_by_what_the_driver_said(cause: BaseException, advice: str) -> None:
    from palaestra.store.driver import store_advice

    assert advice in store_advice(cause)


def test_sigterm_stops_a_writer_with_no_run_to_record(store_uri: str) -> None:
    """(A run interrupted while its writer starts: nothing to record, no 3 s of grace.)"""
    writer = StoreWriter("store", store_uri)
    writer.open()
    writer.start()
    try:
        stopping = writer.on_signal(signal.SIGTERM)
        assert stopping is not None
        run(stopping)
        assert writer.state is State.FINISHED
    finally:
        run(writer.teardown())


def test_sigterm_leaves_a_writer_recording_a_run_to_the_executor(writer: StoreWriter) -> None:
    writer.start()
    run(writer.dispatch(run_start()))
    assert writer.on_signal(signal.SIGTERM) is None
    assert writer.state is State.RUNNING


@pytest.mark.parametrize(
    ("modules", "kept_out"),
    [
        ("palaestra.store.writer", ("sqlalchemy", "palaestra.store.rows", "alembic")),
        (
            "palaestra.store.rows, palaestra.replay.copy, palaestra.experiment.resume, "
            "palaestra.report.palaestrai_steps",
            ("sqlalchemy.orm",),
        ),
    ],
    ids=["writer", "readers"],
)
def test_the_store_is_used_without_the_orm(modules: str, kept_out: tuple[str, ...]) -> None:
    """Every run waits at its start for its writer's imports, every reading command for its
    reader's: SQLAlchemy (about 0.12 s of the writer's 0.16 s) stays out of the writer, which
    talks to the driver (palaestra/store/driver.py), and so do the readers and alembic; its ORM
    (about 0.13 s with declarative classes) stays out of the readers too (the schema is
    palaestra/store/tables.py)."""
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, {modules}; "
            f"print(sorted(m for m in sys.modules if m.startswith({kept_out!r})))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert found.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "uri",
    ["oracle://u:secret@h/db", "mysql://u@h/db"],
    ids=["oracle", "mysql"],
)
def test_a_store_uri_the_writer_cannot_open_is_refused_saying_what_it_takes(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    writer = StoreWriter("store", uri)
    with pytest.raises(StoreError) as caught:
        writer.open()
    said = caught.value.format_message()
    assert caught.value.exit_code == EXIT_STORE_UNUSABLE
    assert "secret" not in said
    assert "the store writer takes sqlite:///<file>" in said
    assert not list(tmp_path.iterdir())  # nothing made


def test_a_store_file_removed_or_replaced_is_kept_whole(tmp_path: Path) -> None:
    """The driver's connection outlives its file: what it wrote is copied to the path again
    (removed), or beside it (replaced: the other file is left alone); writes go on there."""
    import sqlite3

    from palaestra.store.driver import Store

    path = tmp_path / "runs.db"
    store = Store(f"sqlite:///{path}")
    try:
        store.connection.execute("create table t (x)")
        store.connection.execute("insert into t values (1)")
        assert store.kept() is None  # (in place)
        for name in ("runs.db", "runs.db-wal", "runs.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        assert store.kept() == str(path)
        store.connection.execute("insert into t values (2)")  # (into the file at the path)
        with contextlib.closing(sqlite3.connect(path)) as reader:
            assert reader.execute("select x from t").fetchall() == [(1,), (2,)]

        path.unlink()
        with contextlib.closing(sqlite3.connect(path)) as other:
            other.execute("create table other (y)")
        kept = store.kept()
        assert kept is not None and kept.startswith(f"{path}.recovered-")
        with contextlib.closing(sqlite3.connect(kept)) as reader:
            assert reader.execute("select x from t").fetchall() == [(1,), (2,)]
        with contextlib.closing(sqlite3.connect(path)) as other:
            assert other.execute("select name from sqlite_master").fetchall() == [("other",)]
    finally:
        store.close()
