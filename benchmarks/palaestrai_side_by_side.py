"""The same run file on palaestrAI 3.5.18 and on palaestra: per-episode rewards and wall time.

    python benchmarks/palaestrai_side_by_side.py [--palaestrai /work/pai/bin/palaestrai]
        [--seeds 3] [--run-file tests/published/harl_ddpg_run.yml]

Needs ``pip install -e '.[palaestrai]'`` here and palaestrAI 3.5.18 installed in a virtualenv
of its own (its ``palaestrai`` command, given with ``--palaestrai``), with harl and
palaestrai-environments in it too. Each seed runs the run file (its ``seed:`` replaced) once
on each, every run in a fresh directory with a fresh SQLite store (palaestrAI: a runtime config
naming it, and ``palaestrai database-create`` before the timed run). Wall time is the
command's, start to exit. Rewards: each phase's per-episode mean of the agent's objective
(palaestrAI's DummyObjective, the sum of the environment's rewards), read from each store's
``muscle_actions``; for each phase the mean over seeds and episodes on both, with the
standard error over seeds, and whether they agree within twice the combined standard error.
Writes JSON to benchmarks/results/palaestrai_side_by_side.json. Takes minutes (palaestrAI
takes about a minute a run): not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PALAESTRA_REWARDS = (
    'select p."index", m.episode, avg(m.objective) from muscle_actions m '
    "join agents a on a.id = m.agent_id "
    "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
    "where m.objective is not null group by 1, 2 order by 1, 2"
)
PALAESTRAI_REWARDS = (
    "select p.number, m.episode, avg(m.objective) from muscle_actions m "
    "join agents a on a.id = m.agent_id "
    "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
    "where m.objective is not null group by 1, 2 order by 1, 2"
)

Rewards = dict[int, list[float]]
"""Per phase, the per-episode mean objective."""


def with_seed(text: str, seed: int) -> str:
    text, found = re.subn(r"(?m)^seed:.*$", f"seed: {seed}", text, count=1)
    if not found:
        raise SystemExit("the run file has no top-level 'seed:' line")
    return text


def rewards(db: Path, query: str) -> Rewards:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(query).fetchall()
    found: dict[int, list[float]] = defaultdict(list)
    for phase, _episode, value in rows:
        found[int(phase)].append(float(value))
    if not found:
        raise SystemExit(f"{db}: no muscle_actions with an objective")
    return dict(found)


def timed(command: list[str], cwd: str) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed ({done.returncode}):\n"
            f"{(done.stderr or done.stdout)[-4000:]}"
        )
    return seconds


def on_palaestra(text: str) -> tuple[float, Rewards]:
    with tempfile.TemporaryDirectory(prefix="side-by-side-palaestra-") as tmp:
        (Path(tmp) / "run.yml").write_text(text)
        seconds = timed([sys.executable, "-m", "palaestra", "experiment-start", "run.yml"], tmp)
        return seconds, rewards(Path(tmp) / "palaestra.db", PALAESTRA_REWARDS)


def on_palaestrai(palaestrai: str, text: str) -> tuple[float, Rewards]:
    with tempfile.TemporaryDirectory(prefix="side-by-side-palaestrai-") as tmp:
        (Path(tmp) / "run.yml").write_text(text)
        (Path(tmp) / "runtime.yaml").write_text(
            f"store_uri: sqlite:///{tmp}/palaestrai.db\ndata_path: {tmp}/_outputs\n"
        )
        timed([palaestrai, "-c", "runtime.yaml", "database-create"], tmp)
        seconds = timed([palaestrai, "-c", "runtime.yaml", "experiment-start", "run.yml"], tmp)
        return seconds, rewards(Path(tmp) / "palaestrai.db", PALAESTRAI_REWARDS)


def summary(per_seed: list[Rewards], phase: int) -> tuple[float, float]:
    """Mean over seeds of the phase's mean episode reward, and its standard error."""
    means = [statistics.fmean(r[phase]) for r in per_seed]
    sem = statistics.stdev(means) / math.sqrt(len(means)) if len(means) > 1 else math.nan
    return statistics.fmean(means), sem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--palaestrai", default="/work/pai/bin/palaestrai")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--run-file", type=Path, default=ROOT / "tests" / "published" / "harl_ddpg_run.yml"
    )
    args = parser.parse_args()
    base = args.run_file.read_text()
    results: dict[str, list[tuple[float, Rewards]]] = {"palaestra": [], "palaestrai": []}
    for seed in range(1, args.seeds + 1):
        text = with_seed(base, seed)
        results["palaestra"].append(on_palaestra(text))
        results["palaestrai"].append(on_palaestrai(args.palaestrai, text))
        print(
            f"seed {seed}: palaestra {results['palaestra'][-1][0]:.1f} s, "
            f"palaestrAI {results['palaestrai'][-1][0]:.1f} s",
            flush=True,
        )

    print(f"\n{args.run_file.name}, {args.seeds} seeds")
    phases = sorted(results["palaestra"][0][1])
    report: dict[str, object] = {"run_file": str(args.run_file), "seeds": args.seeds}
    agree_all = True
    for phase in phases:
        ours = summary([r[1] for r in results["palaestra"]], phase)
        theirs = summary([r[1] for r in results["palaestrai"]], phase)
        episodes = len(results["palaestra"][0][1][phase]), len(results["palaestrai"][0][1][phase])
        agree = abs(ours[0] - theirs[0]) <= 2 * math.hypot(ours[1], theirs[1])
        agree_all = agree_all and agree
        print(
            f"phase {phase}: mean reward per step {ours[0]:.3f} ± {ours[1]:.3f} (palaestra, "
            f"{episodes[0]} episodes) vs {theirs[0]:.3f} ± {theirs[1]:.3f} (palaestrAI, "
            f"{episodes[1]} episodes): {'agree' if agree else 'DIFFER'} within 2 SE"
        )
        report[f"phase_{phase}"] = {"palaestra": ours, "palaestrai": theirs, "agree": agree}
    ours_s = statistics.median(r[0] for r in results["palaestra"])
    theirs_s = statistics.median(r[0] for r in results["palaestrai"])
    print(
        f"wall time, median: palaestra {ours_s:.1f} s, palaestrAI {theirs_s:.1f} s: "
        f"palaestrAI / palaestra = {theirs_s / ours_s:.1f}"
    )
    report.update(
        seconds={k: [r[0] for r in v] for k, v in results.items()},
        rewards={k: [r[1] for r in v] for k, v in results.items()},
        ratio=theirs_s / ours_s,
        agree=agree_all,
    )
    out = ROOT / "benchmarks" / "results" / "palaestrai_side_by_side.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
