"""Runs on a Ray cluster (runtime config ``backend: ray``, palaestra/experiment/ray_placement.py):
the real CLI against a local 3-node cluster (``ray.cluster_utils.Cluster``, started once for the
module), into PostgreSQL. Every process of a run is a Ray actor's subprocess; the tests find
them by a mark in their environment (``PALAESTRA_TEST_MARK``, passed on to them as every
``PALAESTRA_*`` variable is), wherever Ray started them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXPERIMENTS, Workspace, finish, needs, niceness, wait_for_mark

pytestmark = needs("ray", "the palaestra[ray] extra is not installed")

PLACED = re.compile(r"placed (\S+) on (\S+) \(node (\w+)\)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Head (1 CPU) and two nodes of 2 CPUs; started again once if a node's start times out
    (Ray gives a raylet 30 s to register, which a loaded machine can exceed). Its processes
    and theirs keep their environment readable under a process title (``SPT_NOENV``:
    setproctitle otherwise writes the title over it, and the marks with it)."""
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kept = os.environ.get("SPT_NOENV")
    os.environ["SPT_NOENV"] = "1"
    for attempt in (1, 2):
        nodes = Cluster()
        try:
            nodes.add_node(num_cpus=1)
            nodes.add_node(num_cpus=2)
            nodes.add_node(num_cpus=2)
            nodes.wait_for_nodes()
            break
        except Exception:
            nodes.shutdown()
            if attempt == 2:
                raise
    try:
        yield nodes
    finally:
        nodes.shutdown()
        if kept is None:
            del os.environ["SPT_NOENV"]
        else:
            os.environ["SPT_NOENV"] = kept


def _marked(mark: str) -> list[int]:
    """Live processes whose environment holds ``PALAESTRA_TEST_MARK=mark``."""
    needle = f"PALAESTRA_TEST_MARK={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


def _gone(mark: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


class OnRay:
    """A workspace whose runs go to the cluster, each process marked."""

    def __init__(self, ws: Workspace, cluster: Any, store_uri: str) -> None:
        self.ws = ws
        self.mark = uuid.uuid4().hex
        self.store_uri = store_uri
        address = cluster if isinstance(cluster, str) else cluster.address
        (ws.path / "runtime.yaml").write_text(
            f"store_uri: {store_uri}\nbackend: ray\nray_address: '{address}'\nstart_timeout: 120\n"
        )

    def env(self) -> dict[str, str]:
        env = self.ws.env()
        env["PALAESTRA_TEST_MARK"] = self.mark
        return env

    def start(self, run_file: Path, *, local: bool = False) -> subprocess.Popen[str]:
        config = ["-c", str(self.ws.path / "runtime.yaml")] if not local else []
        env = self.env()
        if local:
            env["PALAESTRA_STORE_URI"] = self.store_uri
        return self.ws.spawn(
            [sys.executable, "-m", "palaestra", "-v", *config, "experiment-start", str(run_file)],
            env,
        )

    def run(self, run_file: Path, *, local: bool = False, timeout: float = 240) -> Any:
        return finish(self.start(run_file, local=local), timeout)


def _rows(store_uri: str, instance: str) -> tuple[list[Any], list[Any]]:
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_uri)
    try:
        with engine.connect() as conn:
            ids = {"i": instance}
            states = conn.execute(
                sqlalchemy.text(
                    "SELECT e.uid, w.worker, w.episode, w.step, w.sensors, w.setpoints, "
                    "w.rewards, w.done FROM world_states w JOIN environments e "
                    "ON w.environment_id = e.id JOIN experiment_run_phases p "
                    "ON e.experiment_run_phase_id = p.id JOIN experiment_run_instances i "
                    'ON p.experiment_run_instance_id = i.id WHERE i.uid = :i ORDER BY p."index", '
                    "e.uid, w.worker, w.episode, w.step"
                ),
                ids,
            ).fetchall()
            actions = conn.execute(
                sqlalchemy.text(
                    "SELECT a.name, m.worker, m.episode, m.step, m.sensor_readings, "
                    "m.actuator_setpoints, m.rewards FROM muscle_actions m "
                    "JOIN agents a ON m.agent_id = a.id JOIN experiment_run_phases p "
                    "ON a.experiment_run_phase_id = p.id JOIN experiment_run_instances i "
                    'ON p.experiment_run_instance_id = i.id WHERE i.uid = :i ORDER BY p."index", '
                    "a.name, m.worker, m.episode, m.step"
                ),
                ids,
            ).fetchall()
    finally:
        engine.dispose()
    return [tuple(r) for r in states], [tuple(r) for r in actions]


def _instances(store_uri: str) -> list[tuple[str, str, str]]:
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_uri)
    try:
        with engine.connect() as conn:
            if not sqlalchemy.inspect(conn).has_table("experiment_run_instances"):
                return []
            found = conn.execute(
                sqlalchemy.text("SELECT uid, status, reason FROM experiment_run_instances")
            ).fetchall()
    finally:
        engine.dispose()
    return [(r[0], r[1], r[2] or "") for r in found]


def _instance_of(out: str) -> str:
    return out.split("(instance ", 1)[1].split(")", 1)[0]


def _long_run(ws: Workspace) -> Path:
    return ws.variant(
        "taking_turns_run.yml",
        (
            "params: {discrete: true, max_iter: 10}",
            "params: {discrete: true, max_iter: 1000000, step_delay: 0.001}",
        ),
        (
            "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}",
            "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 20}}",
        ),
        ("run_config:\n", "run_config:\n  placement: {strategy: SPREAD, num_cpus: 0.5}\n"),
    )


def _acting(
    ws: Workspace, cluster: Any, pg_uri: str
) -> tuple[OnRay, subprocess.Popen[str], list[int]]:
    """A long run on the cluster, once its Muscles act: its processes (at least the writer,
    controller, environment and a Brain and Muscle) marked, each at this process's niceness
    (Ray's workers, their parents, run at 15 by default: starved on a loaded node)."""
    on_ray = OnRay(ws, cluster, pg_uri)
    proc = on_ray.start(_long_run(ws))
    wait_for_mark(ws.path / "acting", proc, 180)
    marked = _marked(on_ray.mark)
    assert len(marked) >= 5, marked
    nice = niceness(marked)
    assert len(nice) >= 5 and nice == dict.fromkeys(nice, os.nice(0)), nice
    return on_ray, proc, marked


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_spread_over_nodes_gives_the_rows_of_a_local_run(
    workspace: Workspace, cluster: Any, pg_uri: str
) -> None:
    on_ray = OnRay(workspace, cluster, pg_uri)
    code, out, err = on_ray.run(EXPERIMENTS / "dummy_run.yml", local=True)
    assert code == 0, err[-3000:]
    local = _instance_of(out)
    spread = workspace.variant(
        "dummy_run.yml", ("run_config:\n", "run_config:\n  placement: {strategy: SPREAD}\n")
    )
    code, out, err = on_ray.run(spread)
    assert code == 0, err[-3000:]
    placed = {name: node for name, _, node in PLACED.findall(err) if name != "the"}
    assert sorted(placed) == sorted(
        [
            "StoreWriter",
            "SimulationController-0",
            "Environment-myenv-0",
            "Brain-defender",
            "Brain-attacker",
            "Muscle-defender-0",
            "Muscle-attacker-0",
        ]
    ), err[-3000:]
    assert len(set(placed.values())) > 1, placed  # SPREAD: on more than one node
    states, actions = _rows(pg_uri, _instance_of(out))
    assert states and actions
    assert (states, actions) == _rows(pg_uri, local)
    assert _gone(on_ray.mark) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_gpu_the_cluster_lacks_exits_2_before_anything_starts(
    workspace: Workspace, cluster: Any, pg_uri: str
) -> None:
    on_ray = OnRay(workspace, cluster, pg_uri)
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n",
            "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"
            "          resources: {brain: {num_gpus: 1}}\n",
        ),
    )
    code, _, err = on_ray.run(run_file)
    assert code == 2, err[-3000:]
    assert "1 GPUs asked (Brain-defender (1)), the cluster has 0: 1 missing" in err
    assert _instances(pg_uri) == []  # nothing started, not even the store writer
    assert _gone(on_ray.mark) == []  # (the undertaker outlives the command by its last look)


@pytest.mark.timeout(120)
def test_sqlite_with_backend_ray_exits_2(workspace: Workspace) -> None:
    on_ray = OnRay(workspace, "127.0.0.1:9", workspace.store_uri)  # refused before connecting
    code, _, err = on_ray.run(EXPERIMENTS / "dummy_run.yml")
    assert code == 2, err[-3000:]
    assert "backend: ray needs a PostgreSQL store" in err
    assert not workspace.store.exists()


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_ctrl_c_stops_every_process_on_every_node(
    workspace: Workspace, cluster: Any, pg_uri: str
) -> None:
    on_ray, proc, _ = _acting(workspace, cluster, pg_uri)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    ((_, status, _),) = _instances(pg_uri)
    assert status == "cancelled"
    assert _gone(on_ray.mark) == []


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sigkill_of_the_executor_leaves_nothing_on_the_nodes(
    workspace: Workspace, cluster: Any, pg_uri: str
) -> None:
    on_ray, proc, _ = _acting(workspace, cluster, pg_uri)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _gone(on_ray.mark, timeout=60) == []


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_node_lost_mid_run_fails_the_run_naming_the_host(
    workspace: Workspace, cluster: Any, pg_uri: str
) -> None:
    """Last in the module: the cluster has one node less afterwards."""
    on_ray, proc, marked = _acting(workspace, cluster, pg_uri)
    victim = next(
        n for n in cluster.worker_nodes if any(_in_ray_worker_of(pid, n) for pid in marked)
    )
    cluster.remove_node(victim)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err[-3000:]
    ((_, status, reason),) = _instances(pg_uri)
    assert status == "error"
    lost = f"on host {victim.node_ip_address} (node {victim.node_id[:8]}, lost with the run's "
    assert lost in reason, reason
    on_it = reason.split("processes on it: ", 1)[1].split(")", 1)[0].split(", ")
    names = {"StoreWriter", "SimulationController-0", "Environment-board-0"}
    names |= {f"Brain-{a}" for a in ("one", "two")} | {f"Muscle-{a}-0" for a in ("one", "two")}
    assert on_it and set(on_it) <= names, reason
    assert _gone(on_ray.mark, timeout=60) == []


def _in_ray_worker_of(pid: int, node: Any) -> bool:
    """Whether process ``pid``'s parent is a Ray worker of ``node`` (its raylet's child)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        with open(f"/proc/{parent}/stat", "rb") as f:
            raylet = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return any(p.process.pid == raylet for p in node.all_processes.get("raylet", []))
