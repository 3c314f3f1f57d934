"""How fast the store writer takes rows, and what storing costs a run end to end.

    python benchmarks/store_writer.py [--rows 200000] [--repeat 3] [--postgres URL | --no-postgres]

1. Writer throughput: a real StoreWriter process (started by palaestra's supervisor, as in a
   run) receives ``muscle_actions`` rows from a real producer process over its PULL socket, in
   the producers' batch size of 1,000 rows, each row as a Muscle writes it (5 sensor readings,
   5 set points, 1 reward; shaped ready to insert, JSON as text, as a Muscle sends them).
   Timed from the producer's first message to the writer's answer that everything is
   committed; the row count is checked in the store afterwards. Median of
   ``--repeat`` runs, on SQLite (WAL) and on PostgreSQL (a fresh database, dropped afterwards).
2. End-to-end cost of storing: ``palaestra experiment-start`` with the store on (SQLite) and off
   (``store_uri: none``), on the 2-phase dummy run and on a 1-phase run of 5,000 steps.

Prints tables and writes JSON to benchmarks/results/store_writer.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from run import child_env  # noqa: E402

from palaestra.core.supervision.esm import Component  # noqa: E402
from palaestra.core.supervision.processes import preload  # noqa: E402
from palaestra.core.supervision.runtime import Runtime  # noqa: E402
from palaestra.core.wire import messages as m  # noqa: E402
from palaestra.core.wire.records import muscle_action_values  # noqa: E402
from palaestra.core.wire.transport import make_run_dir, remove_run_dir  # noqa: E402
from palaestra.store.writer_spec import STORE_WRITER, WriterArgs  # noqa: E402

BATCH = 1000


def produce(endpoint: str, rows: int, agent_id: int, started: Any) -> None:
    """Producer process: pre-encode the batches, then push them as fast as the writer takes."""
    import msgspec
    import zmq

    sensors = {f"env.{i}": i * 0.5 for i in range(5)}
    setpoints = {f"env.{i}": [1.0, 2.0] for i in range(5, 10)}
    row = m.MuscleActionRow(0, 0, sensors, setpoints, {"reward": 1.0}, 1.0, False)
    batches = [
        m.encode(
            m.Rows(
                table="muscle_actions",
                rows=[
                    muscle_action_values(agent_id, 0, msgspec.structs.replace(row, step=step))
                    for step in range(first, min(first + BATCH, rows))
                ],
            )
        )
        for first in range(0, rows, BATCH)
    ]
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, 1000)
    sock.connect(endpoint)
    started.value = time.perf_counter()
    for batch in batches:
        sock.send(batch)
    sock.send(m.encode(m.ProducerClosed(producer="producer")))
    sock.close(linger=-1)
    ctx.term()


class Bench(Component):
    """Parent of one StoreWriter: sets up a run, feeds it, times the commit."""

    def __init__(self, name: str, *, store_uri: str, rows: int) -> None:
        super().__init__(name)
        self.store_uri = store_uri
        self.rows = rows
        self.rate = 0.0

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        runtime.start_task(self.measure())
        return {}

    async def measure(self) -> None:
        rt = self.runtime
        writer = rt.spawn(
            "StoreWriter", "StoreWriter", STORE_WRITER, WriterArgs(store_uri=self.store_uri)
        )
        (endpoints,) = await rt.wait_ready([writer], 60)
        ids = (
            await rt.request(
                "StoreWriter",
                m.StoreRunStart(
                    experiment_uid="bench",
                    run_uid=f"bench-{uuid.uuid4().hex[:8]}",
                    instance_uid=str(uuid.uuid4()),
                    document="",
                    file="",
                    seed=0,
                    palaestra_version="bench",
                    host=platform.node(),
                ),
            )
        ).ids
        phase = (
            await rt.request(
                "StoreWriter",
                m.StorePhaseStart(
                    instance_id=ids["instance"],
                    index=0,
                    name="p",
                    mode="train",
                    workers=1,
                    episodes=1,
                    config={},
                    environments=[],
                    agents=[
                        m.PhaseAgent(
                            name="a", brain="b", muscle="m", objective="o", config={}, seeds={}
                        )
                    ],
                ),
            )
        ).ids
        started = multiprocessing.get_context("fork").Value("d", 0.0)
        producer = multiprocessing.get_context("fork").Process(
            target=produce, args=(endpoints["store"], self.rows, phase["agent:a"], started)
        )
        producer.start()
        await rt.request("StoreWriter", m.StoreFlush(producers=["producer"]))
        self.rate = self.rows / (time.perf_counter() - started.value)
        await asyncio.get_running_loop().run_in_executor(None, producer.join)
        await rt.stop_children()
        self.finish()


def writer_rate(store_uri: str, rows: int) -> float:
    run_dir = make_run_dir()
    try:
        bench = Bench("Bench", store_uri=store_uri, rows=rows)
        code = asyncio.run(Runtime(bench, run_dir=run_dir).run())
        if code != 0:
            raise SystemExit(f"writer benchmark failed: {bench.error}")
    finally:
        remove_run_dir(run_dir)
    check_count(store_uri, rows)
    return bench.rate


def check_count(store_uri: str, rows: int) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(store_uri)
    with engine.connect() as conn:
        n = conn.execute(text("select count(*) from muscle_actions")).scalar_one()
    engine.dispose()
    if n != rows:
        raise SystemExit(f"{store_uri}: {n} rows stored, {rows} sent")


def sqlite_rates(rows: int, repeat: int) -> list[float]:
    rates = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as tmp:
            rates.append(writer_rate(f"sqlite:///{tmp}/bench.db", rows))
    return rates


def postgres_rates(admin_uri: str, rows: int, repeat: int) -> list[float]:
    import psycopg
    from sqlalchemy.engine import make_url

    admin = make_url(admin_uri)
    conninfo = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    rates = []
    for _ in range(repeat):
        name = f"palaestra_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            uri = admin.set(drivername="postgresql+psycopg", database=name)
            rates.append(writer_rate(uri.render_as_string(hide_password=False), rows))
        finally:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return rates


def run_seconds(run_file: Path, store_uri: str) -> float:
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as tmp:
        config = Path(tmp) / "runtime.yaml"
        config.write_text(f"store_uri: {store_uri}\n")
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "-c", str(config), "start", str(run_file)],
            cwd=tmp,
            env=child_env(),  # (this tree's palaestra)
            capture_output=True,
            text=True,
            timeout=600,
        )
        seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"run failed:\n{done.stderr}")
    return seconds


def long_run_file(tmp: Path, steps: int) -> Path:
    text = (ROOT / "experiments" / "dummy_run.yml").read_text()
    head = text.split("  - phase_1:")[0]
    run_config = "run_config:" + text.split("run_config:")[1]
    path = tmp / "long_run.yml"
    path.write_text(head.replace("max_iter: 10", f"max_iter: {steps}") + run_config)
    return path


def storing_cost(repeat: int) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as tmp:
        files = [
            ("2-phase dummy run", ROOT / "experiments" / "dummy_run.yml"),
            ("1 phase, 5,000 steps, 2 agents", long_run_file(Path(tmp), 5000)),
        ]
        for label, run_file in files:
            run_seconds(run_file, "none")  # warm the page cache
            on = [
                run_seconds(run_file, f"sqlite:///{tmp}/{uuid.uuid4().hex}.db")
                for _ in range(repeat)
            ]
            off = [run_seconds(run_file, "none") for _ in range(repeat)]
            out.append(
                {
                    "run": label,
                    "store_on_s": statistics.median(on),
                    "store_off_s": statistics.median(off),
                    "on_all": on,
                    "off_all": off,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "PALAESTRA_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    preload(("palaestra.store.writer",))
    result: dict[str, Any] = {
        "rows": args.rows,
        "repeat": args.repeat,
        "machine": f"{platform.node()} {os.cpu_count()} cpus, Python {platform.python_version()}",
    }
    backends = {"SQLite (WAL)": lambda: sqlite_rates(args.rows, args.repeat)}
    if not args.no_postgres and args.postgres:
        backends["PostgreSQL"] = lambda: postgres_rates(args.postgres, args.rows, args.repeat)
    print(f"{'writer: muscle_actions rows/s':32} {'median':>10} {'min':>10} {'max':>10}")
    result["writer"] = {}
    for name, measure in backends.items():
        rates = measure()
        result["writer"][name] = {"median": statistics.median(rates), "all": rates}
        print(
            f"{name:32} {statistics.median(rates):10,.0f} {min(rates):10,.0f} {max(rates):10,.0f}"
        )
    print(f"\n{'end to end (median wall s)':32} {'store on':>10} {'store off':>10} {'ratio':>7}")
    result["storing_cost"] = storing_cost(args.repeat)
    for row in result["storing_cost"]:
        print(
            f"{row['run']:32} {row['store_on_s']:10.2f} {row['store_off_s']:10.2f} "
            f"{row['store_on_s'] / row['store_off_s']:7.2f}"
        )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "store_writer.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
