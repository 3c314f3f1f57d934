"""Regenerate the documentation's learning curves: run each example, then ``palaestra plot``.

    python tools/docs_images.py [--only first-agent frozenlake ...]

Each example runs with ``palaestra experiment-start`` in a fresh directory (its own SQLite
store); ``palaestra plot RUN`` (the defaults a user gets: smoothed by default) writes
``docs/images/<name>.png``, which the docs pages show. Needs the extras the examples need:
``pip install -e '.[gym,torch,plot]'``. Takes a few minutes (PPO on CartPole is the longest);
not part of the test suite, which runs the examples' code without the images.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"

EXAMPLES = {  # name: (run file, run uid)
    "first-agent-curve": ("docs/first_agent/corridor.yml", "corridor-q"),
    "dummy-run": ("experiments/dummy_run.yml", "dummy-run"),
    "frozenlake-q": ("experiments/frozenlake_q.yml", "frozenlake-q"),
    "tictactoe-turns": ("experiments/tictactoe_turns.yml", "tictactoe-turns"),
    "cartpole-ppo": ("experiments/cartpole_ppo.yml", "cartpole-ppo"),
}


def palaestra(*args: str, cwd: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"palaestra {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(EXAMPLES), default=sorted(EXAMPLES))
    chosen = parser.parse_args().only
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run_file, run = EXAMPLES[name]
        began = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="palaestra-docs-") as tmp:
            palaestra("experiment-start", "-q", str(ROOT / run_file), cwd=tmp)
            palaestra("plot", run, "-o", str(IMAGES / f"{name}.png"), cwd=tmp)
        print(f"{name}: docs/images/{name}.png ({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
