"""What placing a run on Ray costs: the 2-phase dummy run, command start to exit, on this host
(forked processes) and on a local 3-node Ray cluster (PACK and SPREAD), into PostgreSQL.

    python benchmarks/ray_run.py [--runs 3] [--store postgresql+psycopg://postgres@127.0.0.1:5432/test]
                                 [--address HOST:PORT]

Without ``--address`` it starts a ``ray.cluster_utils.Cluster`` (head 1 CPU, two nodes of 2) and
times its start too. Each timed run must exit 0 and leave world_states and muscle_actions rows
in its instance. Also reports the seconds from the command's start to its processes' placement
(the ``placed the executor`` log line of ``palaestra -v``). Prints a table and writes JSON to
benchmarks/results/ray_run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN_FILE = ROOT / "experiments" / "dummy_run.yml"


def one_run(store: str, address: str | None, strategy: str) -> tuple[float, float | None]:
    """Wall seconds of one run, and seconds until its processes were placed (Ray only)."""
    with tempfile.TemporaryDirectory(prefix="palaestra-ray-bench-") as tmp:
        run_file = Path(tmp) / "run.yml"
        run_file.write_text(
            RUN_FILE.read_text().replace(
                "run_config:\n", f"run_config:\n  placement: {{strategy: {strategy}}}\n"
            )
        )
        config = Path(tmp) / "runtime.yaml"
        backend = f"backend: ray\nray_address: '{address}'\n" if address else ""
        config.write_text(f"store_uri: {store}\n{backend}start_timeout: 300\n")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        began = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "palaestra",
                "-v",
                "-c",
                str(config),
                "experiment-start",
                str(run_file),
            ],
            cwd=tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        placed = None
        assert proc.stderr is not None
        for line in proc.stderr:
            if placed is None and "placed the executor" in line:
                placed = time.perf_counter() - began
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=600)
        seconds = time.perf_counter() - began
        if proc.returncode != 0:
            raise SystemExit(f"run failed ({proc.returncode}): {out[-2000:]}")
        check_rows(store, out.split("(instance ", 1)[1].split(")", 1)[0])
        return seconds, placed


def check_rows(store: str, instance: str) -> None:
    import sqlalchemy

    engine = sqlalchemy.create_engine(store)
    with engine.connect() as conn:
        for table, link in (("world_states", "environments"), ("muscle_actions", "agents")):
            column = "environment_id" if link == "environments" else "agent_id"
            (count,) = conn.execute(
                sqlalchemy.text(
                    f"SELECT count(*) FROM {table} t JOIN {link} l ON t.{column} = l.id "
                    "JOIN experiment_run_phases p ON l.experiment_run_phase_id = p.id "
                    "JOIN experiment_run_instances i ON p.experiment_run_instance_id = i.id "
                    "WHERE i.uid = :i"
                ),
                {"i": instance},
            ).one()
            if not count:
                raise SystemExit(f"instance {instance}: no {table} rows")
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--store", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--address", default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count(), "runs": args.runs}
    cluster = None
    address = args.address
    if address is None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        from ray.cluster_utils import Cluster

        began = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1}, connect=False)
        cluster.add_node(num_cpus=2)
        cluster.add_node(num_cpus=2)
        cluster.wait_for_nodes()
        results["cluster_start_s"] = round(time.perf_counter() - began, 2)
        address = cluster.address
    try:
        for label, where, strategy in (
            ("local", None, "PACK"),
            ("ray PACK", address, "PACK"),
            ("ray SPREAD", address, "SPREAD"),
        ):
            timings = [one_run(args.store, where, strategy) for _ in range(args.runs)]
            results[label] = {
                "run_s": round(statistics.median(t for t, _ in timings), 2),
                "placed_s": (
                    round(statistics.median(p for _, p in timings if p is not None), 2)
                    if where
                    else None
                ),
            }
    finally:
        if cluster is not None:
            cluster.shutdown()
    print(json.dumps(results, indent=2))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "ray_run.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
