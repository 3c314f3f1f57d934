"""Wall time of the 2-phase dummy run, command start to exit, median of several runs.

    python benchmarks/dummy_run.py [--runs 5] [--run-file experiments/dummy_run.yml]

Each run starts ``palaestra experiment-start`` in a fresh directory (fresh SQLite store), so
the figure includes interpreter start, imports, the store's creation and every process of the
run. Every timed run is checked: exit 0, one world_states row per environment step and one
muscle_actions row per agent step, so no speed comes from dropped data. Prints a table and
writes JSON to benchmarks/results/dummy_run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run import child_env  # noqa: E402


def one_run(run_file: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-") as tmp:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)],
            cwd=tmp,
            env=child_env(),  # (this tree's palaestra)
            capture_output=True,
            text=True,
            timeout=300,
        )
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"run failed ({done.returncode}):\n{done.stderr}")
        check_store(Path(tmp) / "palaestra.db")
    return seconds


def check_store(db: Path) -> None:
    """One world_states row per environment step; one muscle_actions row per agent per step."""
    with sqlite3.connect(db) as conn:
        per_phase = conn.execute(
            'select p."index", count(distinct w.id), count(distinct m.id), count(distinct a.id) '
            "from experiment_run_phases p join environments e on e.experiment_run_phase_id = p.id "
            "join world_states w on w.environment_id = e.id "
            "join agents a on a.experiment_run_phase_id = p.id "
            "join muscle_actions m on m.agent_id = a.id group by 1"
        ).fetchall()
    if not per_phase:
        raise SystemExit("the store holds no rows")
    for phase, world, actions, agents in per_phase:
        if actions != world * agents:
            raise SystemExit(
                f"phase {phase}: {world} steps but {actions} actions of {agents} agents"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--run-file", type=Path, default=ROOT / "experiments" / "dummy_run.yml")
    args = parser.parse_args()
    one_run(args.run_file)  # warm the page cache; not counted
    times = [one_run(args.run_file) for _ in range(args.runs)]
    result = {
        "benchmark": "dummy_run wall time",
        "run_file": str(
            args.run_file.relative_to(ROOT)
            if args.run_file.is_relative_to(ROOT)
            else args.run_file
        ),
        "runs": args.runs,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "all_s": times,
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}",
    }
    print(f"{'benchmark':28} {'median':>8} {'min':>8} {'max':>8}  runs")
    print(
        f"{'2-phase dummy run (wall)':28} {result['median_s']:7.2f}s {result['min_s']:7.2f}s "
        f"{result['max_s']:7.2f}s  {args.runs}"
    )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "dummy_run.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
