"""Resident memory of every process over a long run: flat, not growing with the steps.

    python benchmarks/memory_flat.py [--steps 1000000] [--store sqlite|none] [--every 1.0]

Runs one phase of one episode of ``--steps`` steps: two dummy agents on one dummy environment
(Vanilla), the store on (a fresh SQLite file) unless ``--store none``. Samples the resident
set size (VmRSS) of every process of the run every ``--every`` seconds and prints, per process,
its RSS at 10 %, 50 % and 100 % of the run (start, middle, end), its peak, and the growth from
the middle to the end. A memory bounded by rows only (the Brain's kept 1,000,000 rows) grows
all along; bounded, every process levels off once its Memory is full (the Brain's after
100,000 steps, 10 % of the default run). With the store on, the run is checked: one
``world_states`` row per step. Writes JSON to benchmarks/results/memory_flat.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import child_env, kill_session, session_members, vm_rss  # noqa: E402

RUN_FILE = """\
uid: memory-flat
experiment_uid: benchmarks
seed: 1
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: env
            params: {{discrete: true, max_iter: {steps}}}
      agents:
        - name: defender
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0, env.1, env.2, env.3, env.4]
          actuators: [env.0, env.1, env.2, env.3, env.4]
        - name: attacker
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.5, env.6, env.7, env.8, env.9]
          actuators: [env.5, env.6, env.7, env.8, env.9]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
POINTS = {"start": 0.1, "middle": 0.5, "end": 1.0}


def title(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    text = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return text.split("]")[0] + "]" if text.startswith("palaestra[") else "command"


def sample(steps: int, store: str, every: float, timeout: float) -> dict[str, Any]:
    """Run the long phase; RSS samples ``(seconds, bytes)`` per process title."""
    with tempfile.TemporaryDirectory(prefix="palaestra-memory-") as tmp:
        run_file = Path(tmp) / "run.yml"
        run_file.write_text(RUN_FILE.format(steps=steps))
        env = child_env()
        env["PALAESTRA_STORE_URI"] = "none" if store == "none" else f"sqlite:///{tmp}/p.db"
        began = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)],
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        series: dict[str, list[tuple[float, int]]] = {}
        others: set[int] = set()
        try:
            while proc.poll() is None:
                now = time.monotonic() - began
                if now > timeout:
                    raise SystemExit(f"the run did not end within {timeout:.0f} s")
                for pid in session_members(proc.pid, others):
                    name, rss = title(pid), vm_rss(pid)
                    if name and rss:
                        series.setdefault(name, []).append((now, rss))
                time.sleep(every)
        finally:
            kill_session(proc.pid, 5.0)
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0:
            raise SystemExit(f"the run failed ({proc.returncode}):\n{stderr[-3000:]}")
        seconds = time.monotonic() - began
        if store != "none":
            with sqlite3.connect(Path(tmp) / "p.db") as conn:
                (rows,) = conn.execute("select count(*) from world_states").fetchone()
            if rows != steps:
                raise SystemExit(f"world_states holds {rows} rows for {steps} steps")
    return {"seconds": seconds, "series": series}


def at(points: list[tuple[float, int]], moment: float) -> int:
    """The last sample taken at or before ``moment`` (the first one if none is)."""
    chosen = points[0][1]
    for seconds, rss in points:
        if seconds > moment:
            break
        chosen = rss
    return chosen


def summarise(series: dict[str, list[tuple[float, int]]]) -> dict[str, dict[str, float]]:
    """Per process: RSS in MiB at the start, middle and end of its life, peak, growth."""
    table = {}
    for name, points in sorted(series.items()):
        first, last = points[0][0], points[-1][0]
        row = {
            label: at(points, first + share * (last - first)) / 2**20
            for label, share in POINTS.items()
        }
        row["peak"] = max(rss for _, rss in points) / 2**20
        row["growth"] = row["end"] - row["middle"]
        table[name] = row
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--store", choices=("sqlite", "none"), default="sqlite")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args()
    result = sample(args.steps, args.store, args.every, args.timeout)
    table = summarise(result["series"])
    rate = args.steps / result["seconds"]
    took = f"{result['seconds']:.0f} s ({rate:,.0f} steps/s)"
    print(f"{args.steps:,} steps, store {args.store}: {took}")
    print(f"{'process':40} {'start':>8} {'middle':>8} {'end':>8} {'peak':>8} {'mid->end':>9}  MiB")
    for name, row in table.items():
        print(
            f"{name:40} {row['start']:8.1f} {row['middle']:8.1f} {row['end']:8.1f} "
            f"{row['peak']:8.1f} {row['growth']:+9.1f}"
        )
    out = BENCH / "results" / "memory_flat.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "steps": args.steps,
                "store": args.store,
                "seconds": result["seconds"],
                "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
                "mib": table,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
