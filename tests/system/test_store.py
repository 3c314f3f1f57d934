"""The store under real runs: off, unusable, shared by concurrent runs, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(180)


def config(ws: Workspace, store_uri: str) -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: {store_uri}\n")
    return str(path)


def scalar_rows(store_uri: str, sql: str) -> list[tuple]:
    engine = create_engine(store_uri)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]
    finally:
        engine.dispose()


def test_without_a_store_the_run_still_loads_dumps_from_files(workspace: Workspace) -> None:
    result = workspace.run(
        "-c", config(workspace, "none"), "start", str(EXPERIMENTS / "dummy_run.yml")
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not any(workspace.path.glob("*.db"))
    dumps = sorted((workspace.path / "_outputs").rglob("defender.bin"))
    assert [d.parent.name for d in dumps] == ["0-phase_0", "1-phase_1"]
    assert json.loads(dumps[1].read_bytes())["thinking_calls"] == 22  # continued from phase 0


def test_an_unreachable_store_exits_3_naming_it(workspace: Workspace) -> None:
    uri = "postgresql+psycopg://nobody@127.0.0.1:1/nothing"
    result = workspace.run(
        "-c", config(workspace, uri), "start", str(EXPERIMENTS / "dummy_run.yml")
    )
    assert result.returncode == 3
    assert "cannot open the store" in result.stderr and "127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr
    assert "phase" not in result.stdout  # (it said the phase started and ended, with nothing)


EXPECTED = {  # run uid -> (world_states, muscle_actions) rows
    "dummy-run": (20, 40),
    "taking-turns-run": (20, 20),
    "multiworker-run": (100, 100),
}


def run_concurrently(ws: Workspace, store_uri: str) -> None:
    cfg = config(ws, store_uri)
    procs = [
        ws.start("-c", cfg, "start", str(EXPERIMENTS / f"{name}.yml"))
        for name in ("dummy_run", "taking_turns_run", "multiworker_run")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    counts = scalar_rows(
        store_uri,
        "select r.uid, i.status, "
        "(select count(*) from world_states w join environments e on e.id = w.environment_id "
        " join experiment_run_phases p on p.id = e.experiment_run_phase_id "
        " where p.experiment_run_instance_id = i.id), "
        "(select count(*) from muscle_actions m join agents a on a.id = m.agent_id "
        " join experiment_run_phases p on p.id = a.experiment_run_phase_id "
        " where p.experiment_run_instance_id = i.id) "
        "from experiment_run_instances i join experiment_runs r on r.id = i.experiment_run_id",
    )
    assert sorted(counts) == sorted((uid, "finished", *rows) for uid, rows in EXPECTED.items())


def test_concurrent_runs_share_a_sqlite_store(workspace: Workspace) -> None:
    run_concurrently(workspace, f"sqlite:///{workspace.path / 'shared.db'}")


def test_concurrent_runs_share_a_postgresql_store(workspace: Workspace, pg_uri: str) -> None:
    run_concurrently(workspace, pg_uri)


@pytest.mark.slow  # (the forms are tested in one process: test_core_misc.py)
def test_a_postgresql_uri_as_libpq_writes_it_is_a_store(workspace: Workspace, pg_uri: str) -> None:
    """``postgresql://`` without a driver: the run failed at its store writer, which took only
    ``postgresql+psycopg://``."""
    plain = pg_uri.replace("postgresql+psycopg://", "postgresql://", 1)
    result = workspace.run(
        "-c", config(workspace, plain), "start", str(EXPERIMENTS / "dummy_run.yml")
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert scalar_rows(pg_uri, "select status from experiment_run_instances") == [("finished",)]
    shown = workspace.run("-c", config(workspace, plain), "experiment-show", "dummy-run")
    assert shown.returncode == 0 and "finished" in shown.stdout, shown.stderr


RUNS = {
    "dummy_run": "dummy-run",
    "taking_turns_run": "taking-turns-run",
    "multiworker_run": "multiworker-run",
}


@pytest.mark.parametrize(
    "name",
    [n if n == "dummy_run" else pytest.param(n, marks=pytest.mark.slow) for n in sorted(RUNS)],
)
def test_the_query_api_returns_the_same_rows_from_postgresql_and_sqlite(
    workspace: Workspace, pg_uri: str, tmp_path: Path, name: str
) -> None:
    from pandas.testing import assert_frame_equal

    from palaestra.store import query

    sqlite_uri = f"sqlite:///{tmp_path / 'same.db'}"
    for uri in (pg_uri, sqlite_uri):
        result = workspace.run(
            "-c", config(workspace, uri), "start", str(EXPERIMENTS / f"{name}.yml")
        )
        assert result.returncode == 0, result.stderr[-2000:]
    run = RUNS[name]
    # when, where, and in which order two Brains' dumps arrived differs from run to run
    varying = ["started_at", "finished_at", "duration_s", "created_at", "path", "id"]
    for function in (
        query.world_states,
        query.muscle_actions,
        query.episode_rewards,
        query.phases,
        query.agents,
        query.brain_states,
    ):
        pg = function(run, store_uri=pg_uri)
        lite = function(run, store_uri=sqlite_uri)
        assert len(pg) > 0, function.__name__
        if "loaded_from" in pg.columns:
            for frame in (pg, lite):
                frame["loaded_from"] = frame["loaded_from"].map(_without_dump_id)
        drop = [c for c in varying if c in pg.columns]
        assert_frame_equal(pg.drop(columns=drop), lite.drop(columns=drop), obj=function.__name__)
    assert_frame_equal(
        query.muscle_actions(run, store_uri=pg_uri, expand=True),
        query.muscle_actions(run, store_uri=sqlite_uri, expand=True),
    )


def _without_dump_id(source: dict | None) -> dict | None:
    return None if source is None else {k: v for k, v in source.items() if k != "brain_state_id"}


@pytest.mark.slow  # (the driver's copy is tested in one process: test_store_writer.py)
@pytest.mark.parametrize("then", ["removed", "replaced"])
def test_a_store_file_removed_while_the_run_writes_it_keeps_the_run(
    workspace: Workspace, then: str
) -> None:
    """``git clean -fdx``, a clean-up script or ``rm`` takes the SQLite file away while a run
    writes it: the run went on into the file still open, finished with exit 0 and "Results are
    in the store ...", and the file was gone with every row. The rows are copied whole to the
    file's path again; where another file took that path, beside it, and the run fails
    (exit 3) naming where they are."""
    import sqlite3
    import time

    from tests.system.test_failure_matrix import count, finish, poll

    run_file = workspace.variant("dummy_run.yml", ("max_iter: 10", "max_iter: 3000"))
    proc = workspace.start("experiment-start", str(run_file))
    assert poll(lambda: count(workspace, "select count(*) from world_states"), 30, proc)
    for name in ("palaestra.db", "palaestra.db-wal", "palaestra.db-shm"):
        (workspace.path / name).unlink(missing_ok=True)
    if then == "replaced":
        with sqlite3.connect(workspace.store) as other:
            other.execute("create table other (x)")
    code, err, _ = finish(proc, time.monotonic())

    if then == "removed":
        assert code == 0, err[-3000:]
        assert f"its file {workspace.store} was removed while the run wrote it" in err
        kept = workspace.store
    else:
        assert code == 3, err[-3000:]
        (kept,) = workspace.path.glob("palaestra.db.recovered-*")
        said = f"its file {workspace.store} was replaced by another while the run wrote it; "
        assert f"{said}the run's rows, with those the store had before, are in {kept}" in err
        with sqlite3.connect(workspace.store) as other:  # (the other file is left as it was)
            assert other.execute("select name from sqlite_master").fetchall() == [("other",)]
    with sqlite3.connect(kept) as conn:
        statuses = conn.execute("select status from experiment_run_instances").fetchall()
        (steps,) = conn.execute("select count(*) from world_states").fetchone()
    assert statuses == [("finished",)]
    assert steps == 2 * 3000  # (both phases, every step)


@pytest.mark.slow
def test_a_run_whose_working_directory_is_removed_keeps_its_store_and_dumps(
    workspace: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A temporary folder cleaned up, or ``rm -rf`` of the experiment's folder, while a run in
    it goes on: the run failed as its next phase began (``FileNotFoundError``, resolving the
    folder of its dumps; exit 1) and its end with a traceback. The dumps and the store's file
    go to the folder's path again, as the store's file alone did."""
    import shutil
    import sqlite3
    import time

    from tests.system.test_failure_matrix import finish, pid_of, poll
    from tests.system.test_limits import DUMMY_ENV

    gate = tmp_path_factory.mktemp("gate") / "gate"  # (outside the folder removed)
    run_file = workspace.variant(
        "dummy_run.yml",
        (DUMMY_ENV, "name: limit_plugins:GatedEnvironment"),
        ("max_iter: 10}", f"max_iter: 10, gate: '{gate}'}}"),
    )
    proc = workspace.start("experiment-start", str(run_file))
    assert poll(lambda: pid_of(workspace, "Environment-myenv-0"), 30, proc)  # (at its gate)
    shutil.rmtree(workspace.path)
    gate.touch()
    code, err, _ = finish(proc, time.monotonic())

    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    with sqlite3.connect(workspace.store) as conn:
        statuses = conn.execute("select status from experiment_run_instances").fetchall()
        (steps,) = conn.execute("select count(*) from world_states").fetchone()
    assert statuses == [("finished",)]
    assert steps == 2 * 10
    dumps = sorted(p.parent.name for p in (workspace.path / "_outputs").rglob("*.bin"))
    assert dumps == ["0-phase_0", "0-phase_0", "1-phase_1", "1-phase_1"]
