"""Learning check: the tabular Q-learning example learns FrozenLake-v1 (slippery 4x4).

    python benchmarks/learning_frozenlake.py [--episodes 5000] [--test-episodes 1000]
                                             [--seed 1] [--bins 10]

Runs ``experiments/frozenlake_q.yml`` (``--episodes`` overrides the train budget) through
``palaestra experiment-start`` in a fresh directory, then reads the store's ``world_states``:
an episode succeeded when its last step's reward is 1 (the goal). Prints the learning curve
(the success rate of each bin of train episodes, with the exploration of that bin falling from
1.0 to 0.05 over the first 4,000 episodes), the test phase's success rate (the greedy policy
from the train phase's dump), the wall time and the steps per second. The optimal policy of
the slippery map succeeds in about 74 to 82% of episodes; a random one in about 1.5%. Takes
about a minute or two: not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_FILE = ROOT / "experiments" / "frozenlake_q.yml"


def run_file(episodes: int, test_episodes: int, seed: int) -> str:
    text = RUN_FILE.read_text()
    text = re.sub(r"episodes: 5000}", f"episodes: {episodes}}}", text, count=1)
    text = re.sub(r"episodes: 1000}", f"episodes: {test_episodes}}}", text, count=1)
    return re.sub(r"^seed: \d+", f"seed: {seed}", text, count=1, flags=re.MULTILINE)


def successes(store: Path) -> dict[str, list[float]]:
    """Per phase name, each episode's reward at its last step (1.0: the goal), in order."""
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "select p.name, w.episode, w.rewards from world_states w "
            "join environments e on e.id = w.environment_id "
            "join experiment_run_phases p on p.id = e.experiment_run_phase_id "
            "where w.done order by p.id, w.worker, w.episode"
        ).fetchall()
        steps = conn.execute("select count(*) from world_states").fetchone()[0]
    found: dict[str, list[float]] = {"_steps": [float(steps)]}
    for phase, _episode, rewards in rows:
        found.setdefault(phase, []).append(float(json.loads(rewards)["reward"]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--test-episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bins", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="palaestra-frozenlake-") as tmp:
        path = Path(tmp) / "frozenlake_q.yml"
        path.write_text(run_file(args.episodes, args.test_episodes, args.seed))
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "experiment-start", str(path)],
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'experiments'}"},
            capture_output=True,
            text=True,
        )
        seconds = time.monotonic() - began
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        found = successes(Path(tmp) / "palaestra.db")
    train, test = found.get("train", []), found.get("test", [])
    size = max(1, len(train) // args.bins)
    print(f"train: {len(train)} episodes, success rate per {size} episodes:")
    for start in range(0, len(train), size):
        part = train[start : start + size]
        bar = "#" * round(40 * sum(part) / len(part))
        print(f"  {start:6d}-{start + len(part) - 1:6d}  {sum(part) / len(part):5.3f}  {bar}")
    rate = sum(test) / len(test) if test else float("nan")
    steps = found["_steps"][0]
    print(f"test: {len(test)} greedy episodes, success rate {rate:.3f}")
    print(f"wall time {seconds:.1f} s, {steps:.0f} steps, {steps / seconds:.0f} steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
