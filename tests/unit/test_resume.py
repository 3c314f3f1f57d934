"""experiment-resume's choices on a store: what is stale, what is refused, which rows of a
resumed instance the run's view keeps (the whole path is in tests/system/test_resume.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pytest
from sqlalchemy import delete, event, select, update

from palaestra.core import procfs
from palaestra.core.description import names
from palaestra.core.description.limits import STALE_AFTER
from palaestra.core.description.specs import PhaseSpec, RunSpec
from palaestra.core.errors import RunFileError, StoreError
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import episode_values, evaluation_values
from palaestra.experiment.resume import NotResumableError, _dumps, _evaluated, _start, load_plan
from palaestra.store import rows
from palaestra.store import tables as t
from palaestra.store import writer as writer_module
from palaestra.store.completed import completed_episodes, first_stored, training_episodes
from palaestra.store.engine import make_engine
from palaestra.store.rows import _kept, shown_status, transaction
from palaestra.store.writer import StoreWriter
from tests.conftest import actions_message, world_message
from tests.unit.test_store_query import (
    AGENTS,
    RUN,
    Clock,
    phase_start,
    request,
    run_start,
    write_store,
)

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("status", "age", "shown"),
    [
        ("running", 0.0, "running"),
        ("running", STALE_AFTER - 0.5, "running"),
        ("running", STALE_AFTER + 0.5, "stale"),
        ("running", None, "running"),  # recorded before heartbeats: unknown
        ("finished", STALE_AFTER + 60, "finished"),
        ("cancelled", STALE_AFTER + 60, "cancelled"),
    ],
)
def test_a_running_instance_with_an_old_heartbeat_is_stale(
    status: str, age: float | None, shown: str
) -> None:
    beat = None if age is None else NOW - dt.timedelta(seconds=age)
    assert shown_status(status, beat, NOW) == shown


@pytest.fixture
def stopped_executor() -> Iterator[subprocess.Popen[str]]:
    """A process titled as the executor of instance ``q2`` (of :func:`write_store`), stopped
    (as Ctrl-Z stops a run's processes); killed after the test."""
    title = procfs.title(names.EXECUTOR, "q2")
    code = "import setproctitle, sys; setproctitle.setproctitle(sys.argv[1]); print(flush=True)"
    child = subprocess.Popen(
        [sys.executable, "-c", code + "; sys.stdin.read()", title],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "\n"  # (titled)
        os.kill(child.pid, signal.SIGSTOP)
        os.waitpid(child.pid, os.WUNTRACED)  # (returns once it stopped)
        yield child
    finally:
        child.kill()
        child.wait()


def test_an_old_heartbeat_of_an_executor_stopped_here_is_stopped_not_stale(
    stopped_executor: subprocess.Popen[str],
) -> None:
    here, old = socket.gethostname(), NOW - dt.timedelta(seconds=STALE_AFTER + 60)
    assert shown_status("running", old, NOW, (here, "q2")) == "stopped"
    assert shown_status("running", old, NOW, ("elsewhere", "q2")) == "stale"  # (not seen)
    assert shown_status("running", old, NOW, (here, "q1")) == "stale"  # another instance's
    os.kill(stopped_executor.pid, signal.SIGCONT)
    os.waitpid(stopped_executor.pid, os.WCONTINUED)
    assert shown_status("running", old, NOW, (here, "q2")) == "running"  # (its beat lags)
    stopped_executor.kill()
    stopped_executor.wait()
    assert shown_status("running", old, NOW, (here, "q2")) == "stale"


def test_an_instance_whose_executor_is_stopped_here_is_refused_saying_how_to_go_on(
    store: str, stopped_executor: subprocess.Popen[str]
) -> None:
    with sqlite3.connect(store.removeprefix("sqlite:///")) as conn:
        conn.execute(
            "update experiment_run_instances set host = ? where uid = 'q2'",
            (socket.gethostname(),),
        )
    (listed,) = rows.runs(run="run-q2", store_uri=store)
    assert listed["status"] == "stopped"
    assert "host" not in listed and "heartbeat_at" not in listed
    with pytest.raises(NotResumableError) as raised:
        load_plan(store, "run-q2", None, 5.0)
    said = str(raised.value)
    assert "instance q2 of run 'run-q2' is stopped" in said, said
    pid = stopped_executor.pid
    assert f"process {pid} on this machine" in said
    assert f"'kill -CONT -- -{os.getpgid(pid)}'" in said and f"'kill -INT {pid}'" in said
    assert raised.value.exit_code == 2
    stopped_executor.kill()
    stopped_executor.wait()
    with pytest.raises(RunFileError):  # gone: stale, and resumed (its run file is a stub)
        load_plan(store, "run-q2", None, 5.0)


def row(phase: int, episode: int | None, worker: int = 0) -> dict[str, object]:
    found: dict[str, object] = {"phase": phase, "worker": worker}
    return found if episode is None else found | {"episode": episode}


def test_a_continued_instance_keeps_its_completed_episodes_before_the_next_start() -> None:
    done = {(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1), (1, 0, 2)}
    start = (1, 2)  # the next instance began at phase 1, episode 2
    assert _kept(row(0, 1), start, done)
    assert _kept(row(1, 1), start, done)
    assert not _kept(row(1, 2), start, done)  # completed, but the next instance replays it
    assert not _kept(row(1, 3), start, done)  # did not complete
    assert not _kept(row(0, 1, worker=1), start, done)  # that worker did not complete it
    assert _kept(row(0, None), start, done)  # a phase before the start (no episode column)
    assert not _kept(row(1, None), start, done)  # the phase the next instance recorded


@pytest.fixture
def store(tmp_path: Path) -> str:
    return write_store(f"sqlite:///{tmp_path}/palaestra.db")


@pytest.mark.parametrize(
    ("run", "instance", "said"),
    [
        (RUN, None, "instance new of run 'run-q' is finished"),
        ("no-such-run", None, "the store has no run 'no-such-run'"),
        (RUN, "nope", "has no instance 'nope'; its instances: old, new"),
    ],
)
def test_what_cannot_be_resumed_is_refused_with_exit_2(
    store: str, run: str, instance: str | None, said: str
) -> None:
    with pytest.raises(NotResumableError, match=said) as raised:
        load_plan(store, run, instance, 5.0)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize(("run", "instance"), [(RUN, "old"), ("run-q2", None)])
def test_a_failed_or_stale_instance_passes_the_status_check(
    store: str, run: str, instance: str | None
) -> None:
    """``old`` ended in error, ``q2`` is stale (its heartbeat is of 2024): planning goes on to
    read the recorded run file, which these stores' runs do not have (``uid:`` only)."""
    with pytest.raises(RunFileError, match="missing required keys 'seed'"):
        load_plan(store, run, instance, 5.0)


def test_a_running_instance_with_a_fresh_heartbeat_is_refused(store: str) -> None:
    database = store.removeprefix("sqlite:///")
    with sqlite3.connect(database) as conn:
        conn.execute(
            "update experiment_run_instances set heartbeat_at = ? where uid = 'q2'",
            (dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" "),),
        )
    with pytest.raises(
        NotResumableError, match="instance q2 of run 'run-q2' is running"
    ) as raised:
        load_plan(store, "run-q2", None, 5.0)
    assert raised.value.exit_code == 2


def write_phase(
    uri: str, record_every: int, missing: str, config: dict[str, object] | None = None
) -> int:
    """A running instance whose phase 0 (one worker, agents attacker and defender) has the
    ``episodes`` rows of episodes 0 to 2 (3 steps each) and their step rows as the processes
    write them (world states of steps 1 to 3, actions of steps 0 to 2, the last flagged done),
    except ``missing`` of episode 1: its last ``world_state`` or an agent's last ``action``;
    the instance's id."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_module, "utcnow", Clock())
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            instance = request(writer, run_start("run-c", "c1", "exp-c")).ids["instance"]
            start = phase_start(instance, 0, "learn", "train", 1, 3)
            config = start.config | {"record_every": record_every} | (config or {})
            ids = request(writer, msgspec.structs.replace(start, config=config)).ids
            states = [
                m.WorldStateRow(e, s, {"myenv.0": s}, {}, {}, s == 3)
                for e in range(3)
                for s in range(1, 4)
                if not (missing == "world_state" and (e, s) == (1, 3))
            ]
            writer.accept(world_message(ids["environment:myenv"], 0, states))
            for agent in AGENTS:
                actions = [
                    m.MuscleActionRow(e, s, {}, {}, {}, 0.0, s == 2)
                    for e in range(3)
                    for s in range(3)
                    if not (missing == "action" and agent == "defender" and (e, s) == (1, 2))
                ]
                writer.accept(actions_message(ids[f"agent:{agent}"], 0, actions))
            ended = [
                m.EpisodeEnded(
                    phase=0,
                    worker=0,
                    episode=e,
                    started_at=1.0,
                    ended_at=2.0,
                    steps=3,
                    terminated=True,
                    truncated=False,
                    rewards={},
                )  # fmt: skip
                for e in range(3)
            ]
            shaped = [episode_values(ids["phase"], row) for row in ended]
            writer.accept(m.Rows(table="episodes", rows=shaped))
        finally:
            asyncio.run(writer.teardown())
    return int(instance)


@pytest.mark.parametrize(
    ("record_every", "missing", "completed", "start"),
    [
        (1, "", [0, 1, 2], 3),
        (1, "world_state", [0, 2], 1),  # its episodes row is in, its last world state is not
        (1, "action", [0, 2], 1),  # the defender's last action is not
        (5, "world_state", [0, 2], 1),  # {every: N} records the last step too
        (0, "world_state", [0, 1, 2], 3),  # record: episodes: the episodes rows alone
    ],
)
def test_an_episode_is_completed_when_its_episodes_row_and_its_last_step_rows_are_in(
    tmp_path: Path, record_every: int, missing: str, completed: list[int], start: int
) -> None:
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    instance = write_phase(uri, record_every, missing)
    with transaction(uri) as connection:
        assert completed_episodes(connection, instance) == {(0, 0, e) for e in completed}
        assert _start(connection, instance) == (0, start)  # the resume's start: the same rule


def write_resumed_twice(uri: str, first: int) -> tuple[int, int]:
    """Instance ``r1`` of run ``run-d``: phase 0 (one worker) whose agent ``defender`` dumped at
    the end of episodes 0 to 4 (dump ``b"after <episode>"``); instance ``r2`` resumed it at
    episode ``first`` of phase 0 and stopped before its Brain dumped (none of its own); their
    ids."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_module, "utcnow", Clock())
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            ids = []
            for uid, since in (("r1", 0), ("r2", first)):
                start = msgspec.structs.replace(
                    run_start("run-d", uid, "exp-d"), resumed_from_id=ids[-1] if ids else None
                )
                instance = request(writer, start).ids["instance"]
                ids.append(instance)
                phase = phase_start(instance, 0, "learn", "train", 1, 9)
                config = phase.config | ({"first_episode": since} if since else {})
                agents = request(writer, msgspec.structs.replace(phase, config=config)).ids
                if uid == "r1":
                    for episode in range(5):
                        dump = f"after {episode}".encode()
                        writer.accept(
                            m.BrainDump(
                                agent_id=agents["agent:defender"], tag="", path="", dump=dump
                            )
                        )
        finally:
            asyncio.run(writer.teardown())
    return int(ids[0]), int(ids[1])


def one_agent_run() -> RunSpec:
    """What ``_dumps`` reads of a run: phase 0, one worker playing one game, agent ``defender``
    with the default ``dump`` policy (a dump per episode)."""
    config = SimpleNamespace(worker=1, envs_per_worker=1)
    agent = SimpleNamespace(name="defender", dump=None)
    return cast(
        RunSpec,
        SimpleNamespace(uid="run-d", phases=[SimpleNamespace(config=config, agents=[agent])]),
    )


@pytest.mark.parametrize("first", [2, 4])
def test_a_resumed_instance_stopped_before_its_first_dump_is_resumed_from_the_dump_it_began_with(
    tmp_path: Path, first: int
) -> None:
    """Resumed again, ``r2`` (which played no episode: it was interrupted at once) starts its
    Brain from the dump ``r1`` wrote at the end of episode ``first - 1``, the one ``r2`` began
    with; it started from no dump at all, and the resumed run differed from the uninterrupted
    one."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    instances = write_resumed_twice(uri, first)
    with transaction(uri) as connection:
        dumps = _dumps(connection, instances[1], one_agent_run(), 0, first)
    assert dumps is not None
    loaded, by_tag, _ = dumps["defender"]
    assert list(by_tag.values()) == [f"after {first - 1}".encode()]
    assert loaded is not None and loaded["phase"] == 0


RUN_C = """\
uid: run-c
experiment_uid: exp-c
seed: 42
version: "0.1"
schedule:
  - learn:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: myenv
            params: {discrete: true, max_iter: 3}
      agents:
        - name: attacker
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [myenv.0]
          actuators: [myenv.0]
        - name: defender
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [myenv.1]
          actuators: [myenv.1]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - {name: palaestra.simulation:VanillaSimControllerTerminationCondition, params: {}}
      phase_config: {mode: train, worker: 1, episodes: 9}
run_config:
  condition: {name: palaestra.experiment:VanillaRunGovernorTerminationCondition, params: {}}
"""


def test_a_resumed_instance_stopped_before_its_phase_began_is_resumed_where_it_was_to_start(
    tmp_path: Path,
) -> None:
    """``c1`` completed episodes 0 to 2 of phase 0 and was cancelled; ``c2`` resumed it and was
    cancelled before its phase was recorded. Resuming ``c2`` starts at episode 3 of phase 0,
    as ``c2`` was to; it started the run over at phase 0, episode 0 (the run's view then held
    episodes 0 to 2 twice)."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    c1 = write_phase(uri, 1, "")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_module, "utcnow", Clock())
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            request(writer, m.StoreRunEnd(instance_id=c1, status="cancelled"))
            start = msgspec.structs.replace(
                run_start("run-c", "c2", "exp-c"), document=RUN_C, resumed_from_id=c1
            )
            c2 = request(writer, start).ids["instance"]
            request(writer, m.StoreRunEnd(instance_id=c2, status="cancelled"))
        finally:
            asyncio.run(writer.teardown())
    with sqlite3.connect(uri.removeprefix("sqlite:///")) as conn:
        conn.execute("update experiment_runs set document = ? where uid = 'run-c'", (RUN_C,))
    plan = load_plan(uri, "run-c", None, 5.0)
    assert plan.instance_uid == "c2"
    assert (plan.at.instance_id, plan.at.phase, plan.at.first_episode) == (c2, 0, 3)


def test_a_plan_reads_one_snapshot_of_the_store(any_store: str) -> None:
    """Another connection commits while the resume is planned (here: the episodes of ``c1``
    are deleted after its run and instance were read, as the run file is loaded): the plan is
    made from the store as its first read saw it, at episode 3 of phase 0. It read the
    episodes as they were after the commit, and planned to start the phase over at episode 0
    (each statement saw the store as it was then)."""
    c1 = resumes(any_store, [])
    other = make_engine(any_store)
    with other.begin() as connection:
        connection.execute(update(t.experiment_runs).values(document=RUN_C))

    def commit_meanwhile(file: str) -> None:
        with other.begin() as connection:
            connection.execute(delete(t.episodes))

    try:
        plan = load_plan(any_store, "run-c", "c1", 5.0, on_file=commit_meanwhile)
    finally:
        other.dispose()
    assert (plan.at.instance_id, plan.at.phase, plan.at.first_episode) == (c1, 0, 3)


def test_a_stale_instance_is_marked_ended_though_another_connection_committed_meanwhile(
    any_store: str,
) -> None:
    """``c1`` is stale (running, its heartbeat of 2024); another run's store writer commits
    while the resume is planned. The plan is read from one snapshot, and ``c1`` is marked
    ``error`` after it, in a transaction of its own: on SQLite a transaction that read a
    snapshot cannot write once another connection has committed (SQLITE_BUSY_SNAPSHOT, at
    once, whatever the busy timeout)."""
    c1 = write_phase(any_store, 1, "")
    other = make_engine(any_store)
    with other.begin() as connection:
        connection.execute(update(t.experiment_runs).values(document=RUN_C))

    def commit_meanwhile(file: str) -> None:
        with other.begin() as connection:
            connection.execute(update(t.experiments).values(uid="exp-renamed"))

    try:
        plan = load_plan(any_store, "run-c", None, 5.0, on_file=commit_meanwhile)
        with other.connect() as connection:
            status, reason = connection.execute(
                select(*t.experiment_run_instances.c["status", "reason"]).where(
                    t.experiment_run_instances.c.id == c1
                )
            ).one()
    finally:
        other.dispose()
    assert plan.status == "stale"
    assert (plan.at.instance_id, plan.at.phase, plan.at.first_episode) == (c1, 0, 3)
    assert status == "error" and "continued by experiment-resume" in reason


def test_a_phase_with_evaluations_resumes_at_its_first_training_episode_not_completed(
    tmp_path: Path,
) -> None:
    """With ``evaluate_every: 2`` (one worker), stored episodes 0 and 1 are training episodes
    and 2 an evaluation rollout: all three completed, the resume starts at training episode 2
    (stored 3), and the view of the instance resumed there keeps stored episodes 0 to 2. The
    stored number was taken as a count of training episodes: the resume started at training
    episode 3 (stored 4), the training episode stored as 3 was never played, and the resumed
    run finished with fewer episodes than the uninterrupted one."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    evaluating = {"worker": 1, "evaluate_every": 2}
    instance = write_phase(uri, 1, "", evaluating)
    with transaction(uri) as connection:
        assert _start(connection, instance) == (0, 2)
    assert first_stored(evaluating | {"first_episode": 2}) == 3
    assert first_stored({"worker": 2, "evaluate_every": 2, "first_episode": 2}) == 2  # none
    assert training_episodes(evaluating, 3) == 2


# --- one instance continues an instance ---------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store: a SQLite file, or a PostgreSQL database (skipped where none answers)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/palaestra.db"
    return cast(str, request.getfixturevalue("pg_uri"))


def resumes(uri: str, continued: list[tuple[str, str]]) -> int:
    """Instance ``c1`` of run ``run-c`` (as :func:`write_phase` writes it), cancelled; then
    each of ``continued`` (uid, the status it ends with; ``running``: none) resuming the one
    before; ``c1``'s id."""
    c1 = write_phase(uri, 1, "")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_module, "utcnow", Clock())
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            request(writer, m.StoreRunEnd(instance_id=c1, status="cancelled"))
            before = c1
            for uid, status in continued:
                start = msgspec.structs.replace(
                    run_start("run-c", uid, "exp-c"), resumed_from_id=before
                )
                before = request(writer, start).ids["instance"]
                if status != "running":
                    request(writer, m.StoreRunEnd(instance_id=before, status=status))
        finally:
            asyncio.run(writer.teardown())
    return c1


def test_of_two_resumes_of_one_instance_at_once_the_first_to_record_runs_the_other_is_refused(
    any_store: str,
) -> None:
    """Both resumes planned (neither saw the other); A records its instance ``c2`` and, before
    A commits, B starts recording its own. B waits for A's transaction (SQLite: its write lock;
    PostgreSQL: A's claim of ``c1``'s row), then finds ``c2`` and is refused with exit 2,
    recording nothing: B's run fails before it started anything. Both were recorded, both ran,
    and the run was recorded twice (two instances continuing ``c1``)."""
    c1 = resumes(any_store, [])
    a, b = StoreWriter("store-a", any_store), StoreWriter("store-b", any_store)
    a.open()
    b.open()
    assert a.store is not None and b.store is not None
    recorded, go = threading.Event(), threading.Event()
    insert = a.store.insert

    def a_waits_before_its_commit(table: str, **values: object) -> int:
        found = insert(table, **values)
        if table == "experiment_run_instances":
            recorded.set()
            assert go.wait(60)
        return found

    a.store.insert = a_waits_before_its_commit  # type: ignore[method-assign]
    outcomes: dict[str, object] = {}

    def start(writer: StoreWriter, uid: str) -> None:
        message = msgspec.structs.replace(run_start("run-c", uid, "exp-c"), resumed_from_id=c1)
        try:
            outcomes[uid] = writer.handle_run_start(message).ids["instance"]
        except Exception as exc:  # noqa: BLE001 - looked at below
            outcomes[uid] = exc

    threads = [
        threading.Thread(target=start, args=(a, "c2")),
        threading.Thread(target=start, args=(b, "c3")),
    ]
    try:
        threads[0].start()
        assert recorded.wait(30)
        threads[1].start()
        threads[1].join(1.0)
        waited = threads[1].is_alive()  # B waits for A's transaction to end
        go.set()
        for thread in threads:
            thread.join(60)
    finally:
        go.set()
        a.store.close()
        b.store.close()
    assert waited, f"B did not wait for A's claim: {outcomes}"
    assert isinstance(outcomes["c2"], int), outcomes
    refused = outcomes["c3"]
    assert isinstance(refused, NotResumableError), outcomes
    assert refused.exit_code == 2
    assert str(refused).startswith(
        "experiment-resume: instance c1 of run 'run-c' is being resumed already, by instance "
        "c2 (running); an instance is continued by one instance only"
    ), refused
    listed = rows.runs(run="run-c", store_uri=any_store)
    assert [row["instance_uid"] for row in listed] == ["c1", "c2"], listed


# --- palaestra clean and experiment-resume take turns ----------------------------------------


def writes(statement: str) -> bool:
    """Whether ``statement`` writes or locks rows (or the store): the first that waits for
    another transaction that holds them."""
    said = statement.lstrip().upper()
    return said.startswith(("BEGIN", "DELETE", "UPDATE", "INSERT")) or "FOR UPDATE" in said


def resume_of(uri: str, c1: int, waiting: bool = True) -> int | BaseException:
    """``c2``'s start, resuming ``c1``, as its store writer records it (with its claim): the
    new instance's id, or what it raised. Not ``waiting``: where the claim would have to wait
    for another transaction (SQLite's write lock, a row PostgreSQL locked), it fails instead."""
    writer = StoreWriter("store-b", uri)
    writer.open()
    assert writer.store is not None
    if not waiting and writer.store.dialect == "sqlite":
        writer.store.connection.execute("PRAGMA busy_timeout = 0")
    elif not waiting:
        writer.store.execute("SET lock_timeout = 1")  # (ms: it fails only where it waits)
        writer.store.connection.commit()
    message = msgspec.structs.replace(run_start("run-c", "c2", "exp-c"), resumed_from_id=c1)
    try:
        return int(writer.handle_run_start(message).ids["instance"])
    except Exception as exc:  # noqa: BLE001 - looked at by the caller
        return exc
    finally:
        writer.store.close()


def test_clean_during_a_resumes_claim_waits_for_it_and_refuses_naming_the_resume(
    any_store: str,
) -> None:
    """A resume of ``c1`` has claimed it and recorded its instance ``c2``, uncommitted, when
    ``palaestra clean run-c`` starts. Clean waits for the claim's transaction before it checks
    the run (SQLite: the write lock; PostgreSQL: ``c1``'s row), then finds ``c2`` running and
    refuses, exit 2, naming it as a resume; ``c2`` runs on. Clean checked before the claim's
    commit and deleted after it: on PostgreSQL it failed on a foreign key (a StoreError, exit 3)
    or deleted ``c2`` with the run, on SQLite it deleted ``c2`` with the run (which failed at
    its next write)."""
    c1 = resumes(any_store, [])
    resume = StoreWriter("store-a", any_store)
    resume.open()
    assert resume.store is not None
    recorded, go, clean_writes = threading.Event(), threading.Event(), threading.Event()
    insert = resume.store.insert

    def waits_before_its_commit(table: str, **values: object) -> int:
        found = insert(table, **values)
        if table == "experiment_run_instances":
            recorded.set()
            assert go.wait(60)
        return found

    resume.store.insert = waits_before_its_commit  # type: ignore[method-assign]
    engine = make_engine(any_store)

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if writes(statement):
            clean_writes.set()

    event.listen(engine, "before_cursor_execute", before)
    outcomes: dict[str, object] = {}

    def resumed() -> None:
        message = msgspec.structs.replace(run_start("run-c", "c2", "exp-c"), resumed_from_id=c1)
        try:
            outcomes["resume"] = resume.handle_run_start(message).ids["instance"]
        except Exception as exc:  # noqa: BLE001 - looked at below
            outcomes["resume"] = exc

    def clean() -> None:
        try:
            outcomes["clean"] = rows.delete_run("run-c", store_uri=engine)
        except Exception as exc:  # noqa: BLE001 - looked at below
            outcomes["clean"] = exc

    threads = [threading.Thread(target=resumed), threading.Thread(target=clean)]
    try:
        threads[0].start()
        assert recorded.wait(30)
        threads[1].start()
        # clean is at its first statement that writes or locks: from there it waits for the
        # claim's transaction, which may end now
        assert clean_writes.wait(30)
        go.set()
        for thread in threads:
            thread.join(60)
    finally:
        go.set()
        resume.store.close()
        engine.dispose()
    assert not any(thread.is_alive() for thread in threads), outcomes
    assert isinstance(outcomes["resume"], int), outcomes
    refused = outcomes["clean"]
    assert isinstance(refused, rows.RunStillRunningError), outcomes
    assert refused.exit_code == 2
    assert str(refused).startswith(
        "run 'run-c' is still running (instance c2, an experiment-resume of instance c1, on host "
    ), refused
    listed = rows.runs(run="run-c", store_uri=any_store)
    assert [(row["instance_uid"], row["status"]) for row in listed] == [
        ("c1", "cancelled"),
        ("c2", "running"),
    ]


def test_a_resume_claiming_while_clean_deletes_the_run_waits_and_is_refused(
    any_store: str,
) -> None:
    """``palaestra clean run-c`` has checked that nothing of the run is running, and not yet
    deleted it, when a resume of ``c1`` comes to claim it: the claim has to wait for clean (it
    cannot take the store's write lock, or ``c1``'s row, at once), and then finds ``c1`` gone
    and is refused, exit 2, recording nothing. The claim committed between clean's check and
    its deletes, and clean deleted the resume's running instance with the run."""
    c1 = resumes(any_store, [])
    engine = make_engine(any_store)
    at_once: list[int | BaseException] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not at_once and statement.lstrip().upper().startswith("DELETE"):
            at_once.append(resume_of(any_store, c1, waiting=False))

    event.listen(engine, "before_cursor_execute", before)
    try:
        deleted = rows.delete_run("run-c", store_uri=engine)
    finally:
        engine.dispose()
    (tried,) = at_once
    assert isinstance(tried, StoreError), f"the claim did not wait for clean: {tried!r}"
    assert deleted["experiment_run_instances"] == 1  # c1
    refused = resume_of(any_store, c1)  # (its wait over)
    assert isinstance(refused, NotResumableError), refused
    assert refused.exit_code == 2
    assert str(refused) == (
        f"experiment-resume: the instance of run 'run-c' to resume (id {c1}) is no longer in "
        "the store (deleted meanwhile)"
    )
    assert rows.runs(store_uri=any_store) == []


@pytest.mark.parametrize(
    ("continued", "said"),
    [
        (
            [("c2", "cancelled")],
            "was resumed already, by instance c2 (cancelled); an instance is continued by one "
            "instance only (two would record the run twice): resume it with 'palaestra "
            "experiment-resume run-c --instance c2'",
        ),
        (
            [("c2", "error"), ("c3", "finished")],
            "was resumed already, by instance c2 (error); an instance is continued by one "
            "instance only (two would record the run twice); the newest instance continuing "
            "it is c3 (finished)",
        ),
        (  # its executor was killed: its heartbeat is old
            [("c2", "running")],
            "was resumed already, by instance c2 (stale); an instance is continued by one "
            "instance only (two would record the run twice): resume it with 'palaestra "
            "experiment-resume run-c --instance c2'",
        ),
    ],
)
def test_an_instance_resumed_already_is_refused_naming_the_newest_instance_continuing_it(
    tmp_path: Path, continued: list[tuple[str, str]], said: str
) -> None:
    """Before anything starts, with exit 2; it was resumed a second time, and the run's view
    (the newest instance's chain) lost the episodes of the first resume's instances."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    resumes(uri, continued)
    with pytest.raises(NotResumableError) as raised:
        load_plan(uri, "run-c", "c1", 5.0)
    assert str(raised.value) == f"experiment-resume: instance c1 of run 'run-c' {said}"
    assert raised.value.exit_code == 2


def test_a_phase_stopped_in_an_evaluation_rollout_resumes_before_it_and_plays_it(
    tmp_path: Path,
) -> None:
    """With ``evaluate_every: 1``, stored episodes 0 and 2 are training episodes, 1 and 3
    evaluation rollouts: 0 to 2 completed, the rollout stored as 3 did not. The resume started
    at training episode 2 (stored 4), after evaluation 1, which was never played: its episode
    was missing from the run's view and its result from the run's condition (exit 0). It
    starts at the training episode before the rollout (1, stored 2), whose end its Brain's
    dump holds, and plays the rollout after it as the uninterrupted run did."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    instance = write_phase(uri, 1, "", {"worker": 1, "evaluate_every": 1})
    with transaction(uri) as connection:
        assert _start(connection, instance) == (0, 1)


def write_evaluations(uri: str, results: list[m.AgentEvaluated]) -> None:
    """The ``evaluations`` rows of ``results`` in phase 0 (the rollout of evaluation ``e`` with
    ``evaluate_every: 1``: stored episode 2 e + 1), as the simulation controller sends them."""
    with sqlite3.connect(uri.removeprefix("sqlite:///")) as conn:
        ids = dict(conn.execute("select name, id from agents").fetchall())
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        values = [
            evaluation_values(ids[r.agent], r, (r.evaluation + 1, 0, 2 * r.evaluation + 1), 1e9)
            for r in results
        ]
        writer.accept(m.Rows(table="evaluations", rows=values))
    finally:
        asyncio.run(writer.teardown())


def evaluating_phase() -> PhaseSpec:
    """What ``_evaluated`` reads of a phase: phase 0, one worker, ``evaluate_every: 1``, agents
    attacker and defender."""
    config = SimpleNamespace(worker=1, evaluate_every=1)
    agents = [SimpleNamespace(name=name) for name in AGENTS]
    return cast(PhaseSpec, SimpleNamespace(index=0, config=config, agents=agents))


def test_a_resumed_phase_is_told_the_results_of_the_evaluations_before_its_start(
    tmp_path: Path,
) -> None:
    """Stored episodes 0 to 2 completed (training, evaluation 0's rollout, training): the phase
    resumes at training episode 1, after evaluation 0, whose results (a NaN, a Brain's None)
    are read back as the condition was told them; evaluation 1's result, whose rollout did not
    complete and is played again, is not."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    instance = write_phase(uri, 1, "", {"worker": 1, "evaluate_every": 1})
    told = [
        m.AgentEvaluated(
            agent="attacker",
            evaluation=0,
            result=True,
            metrics={"score": float("nan"), "gain": 2.5, "text": None},
            checkpoint_id="c0",
        ),
        m.AgentEvaluated(agent="defender", evaluation=0, result=False),
    ]
    later = [m.AgentEvaluated(agent=a, evaluation=1, result=True) for a in AGENTS]
    write_evaluations(uri, [*told, *later])
    with transaction(uri) as connection:
        first, evaluated = _evaluated(connection, instance, evaluating_phase(), 1)
    assert first == 1 and len(evaluated) == 1
    assert msgspec.json.encode(list(evaluated[0])) == msgspec.json.encode(told)  # (NaN: null)
    assert evaluated[0][0].metrics["score"] != evaluated[0][0].metrics["score"]  # NaN


def test_an_evaluation_whose_results_the_store_lacks_is_played_again(tmp_path: Path) -> None:
    """Evaluation 0's rollout completed, but only the attacker's result is in the store (the
    executor was killed before the writer took the rest): the phase resumes at the training
    episode before the rollout, and plays it again."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    instance = write_phase(uri, 1, "", {"worker": 1, "evaluate_every": 1})
    write_evaluations(uri, [m.AgentEvaluated(agent="attacker", evaluation=0, result=True)])
    with transaction(uri) as connection:
        assert _evaluated(connection, instance, evaluating_phase(), 1) == (0, ())
