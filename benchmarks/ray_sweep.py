"""Wall time of a sweep on a local Ray cluster against the same sweep on this machine.

    python benchmarks/ray_sweep.py [--runs 8] [--nodes 3] [--store postgresql+psycopg://...]

Starts a local cluster of ``--nodes`` nodes, one CPU each (``ray.cluster_utils.Cluster``), and
runs ``palaestra experiment-start experiments/dummy_run.yml --seeds 1..N`` on it
(``backend: ray``), then the same sweep locally with ``--parallel <nodes>``; each into a fresh
PostgreSQL database of the server ``--store`` names (default: the local test server). Each
sweep is checked: exit 0 and every run's world_states and muscle_actions rows. Prints the wall
times (command start to exit; the cluster's own start is not in it, the driver joining it is),
the mean seconds per run, and the machine's load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_FILE = ROOT / "experiments" / "dummy_run.yml"


def sweep(store_uri: str, runs: int, backend: str, address: str, parallel: int) -> float:
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as tmp:
        config = Path(tmp) / "runtime.yaml"
        config.write_text(
            f"store_uri: '{store_uri}'\nbackend: {backend}\nray_address: '{address}'\n"
        )
        args = ["--seeds", f"1..{runs}"] + (["--parallel", str(parallel)] if parallel else [])
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "-c", str(config), "experiment-start"]
            + [str(RUN_FILE), *args],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the {backend} sweep failed ({done.returncode}):\n{done.stderr}")
    return seconds


def check(store_uri: str, runs: int) -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_uri)
    with engine.connect() as conn:
        counts = conn.execute(
            sqlalchemy.text(
                "select r.uid,"
                " (select count(*) from world_states w join environments e"
                "  on w.environment_id = e.id join experiment_run_phases p"
                "  on e.experiment_run_phase_id = p.id where p.experiment_run_instance_id = i.id),"
                " (select count(*) from muscle_actions a join agents g on a.agent_id = g.id"
                "  join experiment_run_phases p on g.experiment_run_phase_id = p.id"
                "  where p.experiment_run_instance_id = i.id)"
                " from experiment_runs r join experiment_run_instances i"
                " on i.experiment_run_id = r.id where i.status = 'finished'"
            )
        ).all()
    engine.dispose()
    if len(counts) != runs or any((states, actions) != (20, 40) for _, states, actions in counts):
        raise SystemExit(f"rows missing: {counts}")


def database(admin: str) -> tuple[str, str]:
    from sqlalchemy.engine import make_url

    name = f"palaestra_bench_{uuid.uuid4().hex[:12]}"
    url = make_url(admin)
    return name, url.set(database=name).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--store", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    options = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import psycopg
    from ray.cluster_utils import Cluster
    from sqlalchemy.engine import make_url

    conninfo = make_url(options.store).set(drivername="postgresql")
    conninfo_text = conninfo.render_as_string(hide_password=False)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(options.nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        results = {}
        for backend in ("ray", "local"):
            name, store_uri = database(options.store)
            with psycopg.connect(conninfo_text, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            try:
                address = str(cluster.address) if backend == "ray" else ""
                parallel = 0 if backend == "ray" else options.nodes
                results[backend] = sweep(store_uri, options.runs, backend, address, parallel)
                check(store_uri, options.runs)
            finally:
                with psycopg.connect(conninfo_text, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        cluster.shutdown()
    print(f"{options.runs} runs of dummy_run.yml, {options.nodes} at a time, PostgreSQL store")
    for backend, seconds in results.items():
        where = f"Ray, {options.nodes} nodes x 1 CPU" if backend == "ray" else "this machine"
        print(f"  {where:<24} {seconds:6.1f} s  ({seconds / options.runs:.1f} s per run)")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
