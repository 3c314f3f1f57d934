"""Real-time pacing with a Brain that blocks: the step period at 60 Hz, async and waited for.

    python benchmarks/pacing.py [--rate 60] [--steps 720] [--repeat 3] [--driver auto]

One agent (DummyMuscle) whose Brain (``pacing_plugins:SlowBrain``, tests/plugins) blocks
``--block`` seconds (0.2) on every ``--every``-th (100th) thought, on a ``ClockEnvironment``
paced at ``--rate`` steps per second (``phase_config.step_rate``), one episode of ``--steps``
steps, recorded into a fresh SQLite store by ``palaestra experiment-start``: once with
``update_lag: async`` (the Muscle never waits for its Brain) and once with ``update_lag: 0``
(it waits for the Brain's answer before each action, palaestrAI's way), each ``--repeat``
times. The environment records (into the store, ``plugin_records``) the ``perf_counter`` at
which each of its steps began; the step period is the difference between consecutive ones.

Per run: the period's p50, p99 and max, the p99 of ``|period - 1/rate|``, the steps
``world_states.late_by`` says began more than 1 ms late, and the steps the Muscle acted on a
stale policy (``muscle_actions.stale_policy``). Printed per run and as medians over the runs;
JSON to benchmarks/results/pacing.json. The figure to meet (issue 13): with ``async``, the
p99 of ``|period - 1/rate|`` within 1 ms.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "tests" / "plugins"

RUN = """\
uid: pacing-bench
experiment_uid: pacing-bench
seed: 11
version: "0.1"
schedule:
  - paced:
      environments:
        - environment:
            name: pacing_plugins:ClockEnvironment
            uid: env
            params: {{max_iter: {steps}}}
      agents:
        - name: agent
          brain: {{name: pacing_plugins:SlowBrain, params: {{every: {every}, seconds: {block}}}}}
          muscle:
            name: palaestra.agent.dummy_muscle:DummyMuscle
            params: {{count_upwards: true}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0, env.1, env.2, env.3, env.4]
          actuators: [env.0, env.1, env.2, env.3, env.4]
      simulation:
        name: palaestra.simulation:Vanilla
        params: {{driver: {driver}}}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1, step_rate: {rate}, update_lag: {lag}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def quantile(ordered: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted values."""
    return ordered[max(0, min(len(ordered) - 1, math.ceil(len(ordered) * q) - 1))]


def measure(directory: Path, args: argparse.Namespace, lag: str) -> dict[str, float]:
    """Run once with ``update_lag: lag``; the period figures of its episode (in ms)."""
    directory.mkdir()
    run_file = directory / "run.yml"
    run_file.write_text(
        RUN.format(
            steps=args.steps,
            every=args.every,
            block=args.block,
            driver=args.driver,
            rate=args.rate,
            lag=lag,
        )
    )
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(PLUGINS)]),
        PALAESTRA_STORE_URI=f"sqlite:///{directory / 'palaestra.db'}",
    )
    command = [sys.executable, "-m", "palaestra", "experiment-start", "-q", str(run_file)]
    subprocess.run(command, cwd=directory, env=env, check=True, stdout=subprocess.DEVNULL)
    with sqlite3.connect(directory / "palaestra.db") as db:
        began = [
            float(json.loads(value) if isinstance(value, str) else value)
            for (value,) in db.execute(
                "select value from plugin_records where key = 'began' order by step"
            )
        ]
        (late,) = db.execute("select count(*) from world_states where late_by > 0.001").fetchone()
        (stale,) = db.execute(
            "select count(*) from muscle_actions where stale_policy = 1"
        ).fetchone()
    if len(began) != args.steps:
        raise SystemExit(f"{directory}: {len(began)} step times recorded, not {args.steps}")
    periods = sorted(b - a for a, b in zip(began, began[1:], strict=False))
    target = 1.0 / args.rate
    deviations = sorted(abs(p - target) for p in periods)
    return {
        "period_p50_ms": quantile(periods, 0.5) * 1e3,
        "period_p99_ms": quantile(periods, 0.99) * 1e3,
        "period_max_ms": periods[-1] * 1e3,
        "deviation_p99_ms": quantile(deviations, 0.99) * 1e3,
        "late_steps": late,
        "stale_steps": stale,
    }


COLUMNS = (
    "period_p50_ms",
    "period_p99_ms",
    "period_max_ms",
    "deviation_p99_ms",
    "late_steps",
    "stale_steps",
)


def line(label: str, figures: dict[str, float]) -> str:
    return (
        f"  {label:<14}"
        + "".join(f"{figures[c]:>10.3f}" for c in COLUMNS[:4])
        + "".join(f"{figures[c]:>8.0f}" for c in COLUMNS[4:])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=60.0)
    parser.add_argument("--steps", type=int, default=720)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--every", type=int, default=100, help="the Brain blocks every N calls")
    parser.add_argument("--block", type=float, default=0.2, help="seconds it blocks")
    parser.add_argument("--driver", choices=("auto", "controller", "environment"), default="auto")
    parser.add_argument("--lags", nargs="+", default=["async", "0"])
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for lag in args.lags:
            runs[lag] = [
                measure(Path(scratch) / f"{lag}-{i}", args, lag) for i in range(args.repeat)
            ]
    medians = {
        lag: {c: statistics.median(r[c] for r in found) for c in COLUMNS}
        for lag, found in runs.items()
    }
    print(
        f"{args.rate:g} Hz ({1e3 / args.rate:.3f} ms), {args.steps} steps, Brain blocking "
        f"{args.block * 1e3:.0f} ms every {args.every} thoughts, driver {args.driver}; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  {'update_lag':<14}{'p50':>10}{'p99':>10}{'max':>10}{'|dev| p99':>10}"
        f"{'late':>8}{'stale':>8}   (period, ms; steps)"
    )
    for lag, found in runs.items():
        for i, figures in enumerate(found):
            print(line(f"{lag} run {i}", figures))
        print(line(f"{lag} median", medians[lag]))
    result: dict[str, Any] = {
        "rate": args.rate,
        "steps": args.steps,
        "every": args.every,
        "block_s": args.block,
        "driver": args.driver,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "medians": medians,
        "runs": runs,
    }
    out = ROOT / "benchmarks" / "results" / "pacing.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
