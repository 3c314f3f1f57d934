"""Short episodes: what an episode's end costs a run, against gymnasium's SyncVectorEnv.

    python benchmarks/short_episodes.py [--games 1 64] [--episodes 400 30] [--repeat 3]

CartPole with random pushes ends its episodes after about 20 steps, so an episode's end comes
every few rounds; an agent early in its learning plays such episodes. Each of ``--games``
(N games a worker) plays ``--episodes`` episodes (one figure a game count, in their order):

* palaestra: ``palaestra experiment-start`` of ``benchmarks/vector_envs.py``'s run (one
  worker, ``envs_per_worker: N``, the built-in numpy CartPole, DummyBrain, the store on, every
  step recorded) with ``palaestra.agent:DummyMuscle`` as the Muscle: a random push a step,
  drawn from the actuator's space (seeded at each episode's start). *steady*: steps / (last
  episode's end - first episode's start), from the ``episodes`` table; *between episodes*:
  the median time from a game's episode's end to its next episode's start (the episode's end
  in the Muscle, the Brain's dump, the world's reset, the first step's check).
* gymnasium SyncVectorEnv of N ``CartPole-v1`` (autoreset), a random push a step for each
  game (``action_space.sample()``, seeded), as many steps.

Each figure is the median of ``--repeat`` rounds (a palaestra run, then the gymnasium loop:
interleaved); the ratio is palaestra (steady) / SyncVectorEnv. Prints a table and writes
JSON to benchmarks/results/short_episodes.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from vector_envs import (  # noqa: E402
    CARTPOLE,
    palaestra_rate,
    print_round_ratios,
    write_results,
)

RANDOM = "palaestra.agent:DummyMuscle"


def sync_random_rate(games: int, steps: int) -> float:
    """Steps/s of gymnasium's SyncVectorEnv of ``games`` CartPoles pushed at random."""
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(games)])
    envs.reset(seed=1)
    envs.action_space.seed(2)
    done = 0
    began = time.perf_counter()
    while done < steps:
        envs.step(envs.action_space.sample())
        done += games
    seconds = time.perf_counter() - began
    envs.close()
    return done / seconds


def measure(games: int, episodes: int, repeat: int) -> dict[str, Any]:
    """``repeat`` rounds of a palaestra run and the gymnasium loop right after it; medians."""
    runs, sync = [], []
    for _ in range(repeat):
        runs.append(palaestra_rate(games, 0, 0, CARTPOLE, muscle=RANDOM, episodes=episodes))
        sync.append(sync_random_rate(games, runs[-1]["steps"]))
    steady = statistics.median(r["steady"] for r in runs)
    return {
        "games": games,
        "episodes": episodes,
        "steps": runs[0]["steps"],
        "episode_steps": statistics.median(r["episode_steps"] for r in runs),
        "palaestra_steady": steady,
        "between_episodes_ms": statistics.median(r["between_episodes_ms"] for r in runs),
        "sync_vector_env": statistics.median(sync),
        "ratio_sync": steady / statistics.median(sync),
        "ratio_sync_per_round": [r["steady"] / s for r, s in zip(runs, sync, strict=True)],
        "all": {"palaestra": runs, "sync": sync},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--episodes", type=int, nargs="+", default=[400, 30])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if len(args.episodes) != len(args.games):
        parser.error("--episodes takes one figure for each of --games")
    results = [measure(n, e, args.repeat) for n, e in zip(args.games, args.episodes, strict=True)]
    print(
        f"{'N':>4} {'steps':>7} {'steps/episode':>14} {'palaestra steady':>17} "
        f"{'between episodes':>17} {'SyncVectorEnv':>14} {'ratio':>6}"
    )
    for r in results:
        print(
            f"{r['games']:>4} {r['steps']:>7} {r['episode_steps']:>14.1f} "
            f"{r['palaestra_steady']:>17,.0f} {r['between_episodes_ms']:>14.2f} ms "
            f"{r['sync_vector_env']:>14,.0f} {r['ratio_sync']:>6.2f}"
        )
    print_round_ratios(results)
    write_results("short_episodes", results, repeat=args.repeat)


if __name__ == "__main__":
    main()
