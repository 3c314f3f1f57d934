"""Learning check: in the two-agent example, crosses learns to beat a random noughts.

    python benchmarks/learning_tictactoe.py [--episodes 3000] [--test-episodes 500] [--seed 3]
                                            [--bins 10]

Runs ``experiments/tictactoe_turns.yml`` (PettingZoo's tic-tac-toe under TakingTurns; the
budgets and seed replaced) through ``palaestra experiment-start`` in a fresh directory, then
reads each game's outcome for crosses from the store (``palaestra.store.query.episode_rewards``:
+1 a win, 0 a draw, -1 a loss). Prints the win, draw and loss rates of each bin of training
games (exploration falls from 1.0 to 0.05 over the first 2,000) and of the greedy test phase,
which plays the table the train phase stored; the wall time. Random against random, the first
player wins about 58% of games and loses about 29%. Takes under a minute: not in the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palaestra.store import query  # noqa: E402

RUN_FILE = ROOT / "experiments" / "tictactoe_turns.yml"


def run_file(episodes: int, test_episodes: int, seed: int) -> str:
    text = RUN_FILE.read_text()
    text = re.sub(r"episodes: 3000}", f"episodes: {episodes}}}", text, count=1)
    text = re.sub(r"episodes: 500}", f"episodes: {test_episodes}}}", text, count=1)
    return re.sub(r"^seed: \d+", f"seed: {seed}", text, count=1, flags=re.MULTILINE)


def rates(outcomes: list[float]) -> str:
    n = max(1, len(outcomes))
    wins, draws = sum(o > 0 for o in outcomes), sum(o == 0 for o in outcomes)
    return f"win {wins / n:.2f}  draw {draws / n:.2f}  loss {(n - wins - draws) / n:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--test-episodes", type=int, default=500)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--bins", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tictactoe.yml"
        path.write_text(run_file(args.episodes, args.test_episodes, args.seed))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "experiments"), str(ROOT)]))
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "palaestra", "experiment-start", "-q", str(path)],
            cwd=tmp,
            env=env,
            check=True,
        )
        wall = time.perf_counter() - started
        rows = query.episode_rewards(
            "tictactoe-turns", agent="crosses", store_uri=f"sqlite:///{tmp}/palaestra.db"
        )
    by_phase: dict[str, list[float]] = {}
    for row in rows.to_dict("records") if hasattr(rows, "to_dict") else rows:
        by_phase.setdefault(str(row["phase_name"]), []).append(float(row["reward"]))
    train, test = by_phase.get("play", []), by_phase.get("test", [])
    size = max(1, len(train) // args.bins)
    print(f"tic-tac-toe, crosses (learning) against a random noughts, seed {args.seed}")
    for start in range(0, len(train), size):
        print(
            f"  train games {start:5d}-{start + size - 1:5d}: {rates(train[start : start + size])}"
        )
    print(f"  test ({len(test)} greedy games):      {rates(test)}")
    print(f"  wall time {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
