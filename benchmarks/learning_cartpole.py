"""Learning check: PPO on CartPole-v1 through palaestra against the same PPO in a plain loop.

    python benchmarks/learning_cartpole.py [--seeds 1 2 3] [--runs 1] [--episodes N]
                                           [--bins 10]

For each seed (and ``--runs`` times), one after the other so that the timings do not share
the CPU:

* palaestra: ``palaestra experiment-start`` on ``experiments/cartpole_ppo.yml`` (its seed and
  budget replaced), in a fresh directory with a SQLite store; read back with
  ``palaestra.store.query``: the train phase's episodes (returns, steps) and duration, and the
  test phase's 100 greedy episodes, which the Muscle plays with the model it loads from the
  dump;
* the floor: ``benchmarks/cartpole_floor.py`` with the same seed and budget (the same learner,
  imported from the example, in one process, no messages, no store).

It prints each side's wall time, train steps and environment steps/s (train phase), the ratio
palaestra/floor of seconds per step, the learning curve (mean episode return per bin of
episodes) and the test mean over 100 episodes (solved: >= 475); the medians over the runs of
a seed; and writes JSON to ``benchmarks/results/learning_cartpole.json``. Exits 1 if a
palaestra run does not solve CartPole. Needs ``pip install -e '.[gym,torch,pandas]'``; takes
minutes: not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from palaestra.store import query  # noqa: E402

RUN_FILE = ROOT / "experiments" / "cartpole_ppo.yml"
SOLVED = 475.0


def budget() -> int:
    """The train episodes of the example's run file (its ``&budget`` anchor)."""
    found = re.search(r"&budget (\d+)", RUN_FILE.read_text())
    assert found, f"no '&budget N' in {RUN_FILE}"
    return int(found.group(1))


def run_file(seed: int, episodes: int) -> str:
    """The example's run file with ``seed`` and a budget of ``episodes``."""
    text = RUN_FILE.read_text()
    text = re.sub(r"^seed: \d+", f"seed: {seed}", text, flags=re.M)
    return re.sub(r"&budget \d+", f"&budget {episodes}", text)


def on_palaestra(seed: int, episodes: int) -> dict[str, Any]:
    """One palaestra run: its figures, read from the store."""
    with tempfile.TemporaryDirectory(prefix="palaestra-cartpole-") as tmp:
        path = Path(tmp) / "cartpole_ppo.yml"
        path.write_text(run_file(seed, episodes))
        paths = [
            str(ROOT / "experiments"),
            str(ROOT),
            *filter(None, [os.environ.get("PYTHONPATH")]),
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "experiment-start", str(path)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"seed {seed}: palaestra failed ({done.returncode}):\n{done.stderr}")
        store = f"sqlite:///{tmp}/palaestra.db"
        rewards = query.episode_rewards("cartpole-ppo", store_uri=store)
        phases = query.phases("cartpole-ppo", store_uri=store)
        agents = query.agents("cartpole-ppo", phase="test", store_uri=store)
        episodes = query.episodes("cartpole-ppo", phase="train", store_uri=store)
    train = rewards[rewards.phase_name == "train"].sort_values("episode")
    tested = rewards[rewards.phase_name == "test"]
    # the time the episodes took, from the first one's start to the last one's end (the
    # floor's train_seconds): the phase's duration also holds its start-up (processes, torch)
    began, ended = pd.to_datetime(episodes.started_at).min(), pd.to_datetime(episodes.ended_at)
    seconds = (ended.max() - began).total_seconds()
    steps = int(train.steps.sum())
    return {
        "wall_seconds": round(wall, 3),
        "phase_seconds": round(float(phases[phases.name == "train"].duration_s.iloc[0]), 3),
        "train_seconds": round(seconds, 3),
        "truncated_episodes": int(episodes.truncated.fillna(False).astype(bool).sum()),
        "train_steps": steps,
        "steps_per_second": round(steps / seconds, 1),
        "train_returns": [float(r) for r in train.reward],
        "test_returns": [float(r) for r in tested.reward],
        "test_mean": float(tested.reward.mean()),
        "test_loaded_from": agents.loaded_from.iloc[0],
    }


def on_floor(seed: int, episodes: int) -> dict[str, Any]:
    """One run of the floor, in a process of its own."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cartpole_floor.py")]
        + ["--seed", str(seed), "--episodes", str(episodes)],
        capture_output=True,
        text=True,
        timeout=3600,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    result["wall_seconds"] = round(time.perf_counter() - began, 3)
    return result


def curve(returns: list[float], bins: int) -> list[float]:
    """The mean return of each of ``bins`` consecutive bins of episodes."""
    size = max(1, len(returns) // bins)
    return [
        round(statistics.fmean(returns[i : i + size]), 1) for i in range(0, len(returns), size)
    ]


def report(seed: int, palaestra: dict[str, Any], floor: dict[str, Any], bins: int) -> None:
    ratio = (palaestra["train_seconds"] / palaestra["train_steps"]) / (
        floor["train_seconds"] / floor["train_steps"]
    )
    print(f"seed {seed}")
    for name, r in (("palaestra", palaestra), ("floor", floor)):
        print(
            f"  {name:<9} wall {r['wall_seconds']:7.1f} s  train {r['train_seconds']:7.1f} s  "
            f"{r['train_steps']:>7} steps  {r['steps_per_second']:7.1f} steps/s  "
            f"test mean {r['test_mean']:6.1f} over {len(r['test_returns'])}"
        )
        print(f"  {'':<9} curve (mean return per bin): {curve(r['train_returns'], bins)}")
    print(
        f"  palaestra: train phase {palaestra['phase_seconds']:.1f} s with its start-up; "
        f"{palaestra['truncated_episodes']} train episodes cut off at 500 steps"
    )
    print(f"  palaestra/floor, seconds per train step: {ratio:.2f}")


def medians(results: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("wall_seconds", "train_seconds", "train_steps", "steps_per_second", "test_mean")
    return {
        f"{side}_{key}": statistics.median(r[side][key] for r in results)
        for side in ("palaestra", "floor")
        for key in keys
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--runs", type=int, default=1, help="runs of each seed (medians)")
    parser.add_argument("--episodes", type=int, default=budget(), help="train episodes")
    parser.add_argument("--bins", type=int, default=10, help="bins of the learning curve")
    args = parser.parse_args()
    print(f"CartPole-v1, PPO, {args.episodes} train episodes, 100 greedy test episodes")
    results = []
    for seed in args.seeds:
        for _ in range(args.runs):
            palaestra, floor = on_palaestra(seed, args.episodes), on_floor(seed, args.episodes)
            report(seed, palaestra, floor, args.bins)
            results.append({"seed": seed, "palaestra": palaestra, "floor": floor})
    summary = medians(results)
    summary["ratio_seconds_per_step"] = (
        summary["floor_steps_per_second"] / summary["palaestra_steps_per_second"]
    )
    print("medians: " + ", ".join(f"{k} {v:.2f}" for k, v in summary.items()))
    out = ROOT / "benchmarks" / "results" / "learning_cartpole.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "episodes": args.episodes,
                "results": results,
                "medians": summary,
                "python": platform.python_version(),
            },
            indent=1,
        )
    )
    unsolved = [r["seed"] for r in results if r["palaestra"]["test_mean"] < SOLVED]
    if unsolved:
        print(f"NOT solved on palaestra (test mean < {SOLVED}) for seeds {unsolved}")
        sys.exit(1)


if __name__ == "__main__":
    main()
