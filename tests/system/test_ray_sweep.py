"""Sweeps on Ray: a 3-node local cluster (``ray.cluster_utils.Cluster``) runs the runs of a
sweep into one PostgreSQL store; bad input and an unreachable cluster are refused in time."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS, Workspace, env_hiding, niceness

pytestmark = pytest.mark.timeout(180)

RUN_FILE = str(EXPERIMENTS / "dummy_run.yml")
ONE_PHASE = (re.compile(r"  - phase_1:.*?(?=run_config:)", re.S), "")
"""Drops the dummy run's second phase: a shorter run."""
CRASHING_BRAIN = (
    "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}",
    "brain: {name: probes:CrashingBrain, params: {after: 1}}",
)
ENDED = re.compile(r"^\[\d+/\d+\] (\S+): (\w+) \(node (\S+)\)", re.M)


def _config(ws: Workspace, store_uri: str, ray_address: str = "") -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: '{store_uri}'\nbackend: ray\nray_address: '{ray_address}'\n")
    return str(path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rows_per_run(store_uri: str) -> dict[str, tuple[str, int, int]]:
    """Each run's status and its numbers of world_states and muscle_actions rows."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_uri)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sqlalchemy.text(
                    "select r.uid, i.status,"
                    " (select count(*) from world_states w"
                    "  join environments e on w.environment_id = e.id"
                    "  join experiment_run_phases p on e.experiment_run_phase_id = p.id"
                    "  where p.experiment_run_instance_id = i.id),"
                    " (select count(*) from muscle_actions a join agents g on a.agent_id = g.id"
                    "  join experiment_run_phases p on g.experiment_run_phase_id = p.id"
                    "  where p.experiment_run_instance_id = i.id)"
                    " from experiment_runs r"
                    " join experiment_run_instances i on i.experiment_run_id = r.id"
                )
            ).all()
    finally:
        engine.dispose()
    return {uid: (status, states, actions) for uid, status, states, actions in rows}


def _statuses(store_uri: str) -> list[str]:
    """The statuses of the run instances in the store (none before its tables exist)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_uri)
    try:
        with engine.connect() as conn:
            if not sqlalchemy.inspect(conn).has_table("experiment_run_instances"):
                return []
            query = "select status from experiment_run_instances order by status"
            return list(conn.execute(sqlalchemy.text(query)).scalars())
    finally:
        engine.dispose()


def _in(path: Path) -> list[int]:
    """Processes whose working directory is ``path``: a run's executor and its processes."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(path):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _gone(path: Path, timeout: float = 15.0) -> list[int]:
    """Poll (bounded) until no process works in ``path`` (the actors are killed as their runs
    end, a moment after); returns those left."""
    deadline = time.monotonic() + timeout
    while (left := _in(path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


# --- refused before anything runs ------------------------------------------------------------


def test_sqlite_store_with_backend_ray_exits_2(workspace: Workspace) -> None:
    result = workspace.run("experiment-start", "--backend", "ray", RUN_FILE, "--seeds", "1..2")
    assert result.returncode == 2, result.stderr
    assert "backend: ray needs a PostgreSQL store" in result.stderr
    assert "store_uri: postgresql+psycopg://" in result.stderr
    assert not workspace.store.exists()


def test_unreachable_ray_address_exits_3_in_time_naming_it(workspace: Workspace) -> None:
    address = f"127.0.0.1:{_free_port()}"
    config = _config(workspace, "none", address)
    result = workspace.run("-c", config, "experiment-start", RUN_FILE, "--seeds", "1..2")
    assert result.returncode == 3, result.stderr
    assert f"the Ray cluster at ray_address '{address}' cannot be reached" in result.stderr
    assert result.seconds < 30


def test_backend_ray_without_the_extra_exits_2_with_the_install_line(
    workspace: Workspace,
) -> None:
    import subprocess
    import sys

    config = _config(workspace, "none")
    proc = subprocess.run(
        [sys.executable, "-m", "palaestra", "-c", config, "experiment-start", RUN_FILE],
        cwd=workspace.path,
        env=env_hiding(workspace, "ray"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "backend: ray needs ray, which is not installed" in proc.stderr
    assert "pip install 'palaestra[ray]'" in proc.stderr


@pytest.mark.slow
def test_an_empty_ray_address_starts_a_local_instance_and_shuts_it_down(
    workspace: Workspace,
) -> None:
    config = _config(workspace, "none")
    result = workspace.run(
        "-c", config, "experiment-start", RUN_FILE, "--seeds", "1..2", timeout=150
    )
    assert result.returncode == 0, result.stderr
    assert "Sweep on Ray (a local Ray instance: 1 node," in result.stdout
    assert result.stdout.count(": finished (node ") == 2
    assert "WARNING" not in result.stderr  # Ray's notices stay out of the terminal
    # the workspace fixture: no process of the command (Ray's included) is left


@pytest.mark.slow
def test_sigterm_of_a_sweep_on_a_local_instance_exits_143(workspace: Workspace) -> None:
    # ray.init on the main thread puts in Ray's own SIGTERM handler, sys.exit(15): the sweep
    # exited 15, its table unsaid
    config = _config(workspace, "none")
    proc = workspace.start(
        "-c",
        config,
        "experiment-start",
        RUN_FILE,
        "--set",
        "schedule.1.phase_1.phase_config.episodes=100000,100001",
        "--parallel",
        "1",
    )
    assert proc.stdout is not None
    line = ""
    while ": running on node " not in line:  # bounded by the test's timeout
        line = proc.stdout.readline()
        assert line, f"the sweep ended before its run began: {proc.stderr.read()}"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 143, err
    assert err.endswith("Terminated.\n")
    assert "Sweep: 2/2 ended (0 finished, 0 failed, 2 cancelled)" in out
    rows = [line.split() for line in out[out.index("run ") :].splitlines()[1:]]
    assert [row[2:] for row in rows] == [["cancelled", "143"]] * 2
    # the workspace fixture: no process of the command (Ray's included) is left


# --- on a cluster of three nodes -------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_address() -> Iterator[str]:
    """A local Ray cluster of three nodes, one CPU each, for the module's tests."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield str(cluster.address)
    finally:
        cluster.shutdown()


@pytest.mark.slow
def test_eight_runs_on_three_nodes_into_postgresql(
    workspace: Workspace, pg_uri: str, cluster_address: str
) -> None:
    config = _config(workspace, pg_uri, cluster_address)
    result = workspace.run(
        "-c", config, "experiment-start", RUN_FILE, "--seeds", "1..8", timeout=150
    )
    assert result.returncode == 0, result.stderr
    assert "3 nodes, 3 CPUs): 8 runs, up to 3 at a time." in result.stdout
    uids = [f"dummy-run-seed{seed}" for seed in range(1, 9)]
    ended = {uid: (status, node) for uid, status, node in ENDED.findall(result.stdout)}
    assert sorted(ended) == sorted(uids)
    assert {status for status, _ in ended.values()} == {"finished"}
    assert len({node for _, node in ended.values()}) > 1  # Ray spread them
    assert "Sweep: 8/8 ended (8 finished, 0 failed, 0 cancelled), 0 running, 0 waiting." in (
        result.stdout
    )
    # 2 phases x 1 episode x 10 steps; 2 agents
    assert _rows_per_run(pg_uri) == {uid: ("finished", 20, 40) for uid in uids}


@pytest.mark.slow
def test_a_failing_run_does_not_stop_the_others_and_the_sweep_exits_1(
    workspace: Workspace, pg_uri: str, cluster_address: str
) -> None:
    run_file = workspace.variant("dummy_run.yml", ONE_PHASE, CRASHING_BRAIN)
    config = _config(workspace, pg_uri, cluster_address)
    after = "schedule.0.phase_0.agents.0.brain.params.after"
    result = workspace.run(
        "-c", config, "experiment-start", str(run_file), "--set", f"{after}=100,1,101"
    )
    assert result.returncode == 1, result.stderr
    assert "dummy-run-after1: error (node " in result.stderr
    assert "brain broke after 1 calls" in result.stderr
    table = result.stdout[result.stdout.index("run ") :].splitlines()
    assert [line.split()[2:] for line in table[1:]] == [
        ["finished", "0"],
        ["error", "1"],
        ["finished", "0"],
    ]
    rows = _rows_per_run(pg_uri)
    assert rows["dummy-run-after100"] == rows["dummy-run-after101"] == ("finished", 10, 20)
    assert rows["dummy-run-after1"][0] == "error"


@pytest.mark.slow
def test_ctrl_c_cancels_the_runs_on_the_cluster_and_leaves_nothing_running(
    workspace: Workspace, pg_uri: str, cluster_address: str
) -> None:
    config = _config(workspace, pg_uri, cluster_address)
    proc = workspace.start(
        "-c",
        config,
        "experiment-start",
        RUN_FILE,
        "--set",
        "schedule.1.phase_1.phase_config.episodes=100000,100001,100002,100003",
        "--parallel",
        "2",
    )
    assert proc.stdout is not None
    began = 0
    while began < 2:  # both placed on a node; bounded by the test's timeout
        line = proc.stdout.readline()
        assert line, f"the sweep ended before its runs began: {proc.stderr.read()}"
        began += ": running on node " in line
    deadline = time.monotonic() + 60
    while _statuses(pg_uri) != ["running", "running"]:  # both executors recording
        assert time.monotonic() < deadline, _statuses(pg_uri)
        time.sleep(0.1)
    # the runs' executors and their processes at this process's niceness (Ray's workers,
    # their parents, run at 15 by default: starved on a loaded node)
    nice = niceness(_in(workspace.path))
    assert len(nice) > 2 and nice == dict.fromkeys(nice, os.nice(0)), nice
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    rows = [line.split() for line in out[out.index("run ") :].splitlines()[1:]]
    assert [row[2:] for row in rows] == [["cancelled", "130"]] * 4
    assert _statuses(pg_uri) == ["cancelled", "cancelled"]  # stopped cleanly, in the store
    assert _gone(workspace.path) == []  # the executors and their processes have ended
