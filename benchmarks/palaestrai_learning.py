"""Learning check: harl's SAC (palaestrai-agents) learns Pendulum-v1 on palaestra.

    python benchmarks/palaestrai_learning.py [--seeds 2] [--episodes 40] [--jobs 1]
                                             [--algorithm sac|ddpg|td3]

Needs ``pip install -e '.[palaestrai]'`` (torch, palaestrai-agents, palaestrai-environments,
gymnasium). Each seed runs one train phase through ``palaestra experiment-start``, in a fresh
directory, with a run file written as a palaestrAI user writes it: harl's brain and muscle,
palaestrAI's DummyObjective (the objective is the environment's reward), and
palaestrai-environments' gymnasium wrapper on Pendulum-v1 (200 steps an episode; a random
policy scores about -1,200 an episode, a good one above -250). The script prints each
episode's reward (the sum over its steps, read from the store's muscle_actions), the median
and range over the seeds, and whether the curve improves clearly: the median of the last three
episodes at least 40% closer to 0 than that of the first three, and every seed's last three
better than its first three. Writes JSON to benchmarks/results/palaestrai_learning.json. Takes
minutes: not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BRAINS = {
    "sac": (
        "harl:SACBrain",
        "{fc_dims: [64, 64], replay_size: 50000, batch_size: 128, lr: 0.001, "
        "update_after: 400, update_every: 50}",
        "harl:SACMuscle",
        "{start_steps: 400, seed: SEED}",
    ),
    "ddpg": (
        "harl:DDPGBrain",
        "{fc_dims: [64, 64], replay_size: 50000, batch_size: 128, lr: 0.001, "
        "update_after: 400, update_every: 50}",
        "harl:OffPolicyMuscle",
        "{start_steps: 400, noise_std: 0.1, seed: SEED}",
    ),
    "td3": (
        "harl:TD3Brain",
        "{fc_dims: [64, 64], replay_size: 50000, batch_size: 128, lr: 0.001, "
        "update_after: 400, update_every: 50}",
        "harl:OffPolicyMuscle",
        "{start_steps: 400, noise_std: 0.1, seed: SEED}",
    ),
}

RUN_FILE = """\
uid: harl-{algorithm}-pendulum-seed-{seed}
experiment_uid: harl-{algorithm}-pendulum
seed: {seed}
version: 3.5.18
schedule:
  - train:
      environments:
        - environment:
            name: palaestrai_environments.gym.gym_environment:GymEnvironment
            uid: gym
            params:
              env_name: Pendulum-v1
              conversion: null
              reward_space: "Box(low=-1000, high=1000, shape=(1,), dtype=np.float32)"
      agents:
        - name: {algorithm}
          brain:
            name: {brain}
            params: {brain_params}
          muscle:
            name: {muscle}
            params: {muscle_params}
          objective:
            name: palaestrai.agent.dummy_objective:DummyObjective
            params: {{}}
          sensors: [gym.0]
          actuators: [gym.0]
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: {episodes}}}
run_config:
  condition:
    name: palaestrai.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def run_file(algorithm: str, seed: int, episodes: int) -> str:
    brain, brain_params, muscle, muscle_params = BRAINS[algorithm]
    return RUN_FILE.format(
        algorithm=algorithm,
        seed=seed,
        episodes=episodes,
        brain=brain,
        brain_params=brain_params,
        muscle=muscle,
        muscle_params=muscle_params.replace("SEED", str(seed)),
    )


def one_seed(algorithm: str, seed: int, episodes: int) -> tuple[list[float], float]:
    """The per-episode rewards of one run, and its wall time."""
    with tempfile.TemporaryDirectory(prefix="palaestra-learning-") as tmp:
        path = Path(tmp) / "run.yml"
        path.write_text(run_file(algorithm, seed, episodes))
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "experiment-start", str(path)],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"seed {seed}: run failed ({done.returncode}):\n{done.stderr}")
        with sqlite3.connect(Path(tmp) / "palaestra.db") as conn:
            rows = conn.execute(
                "select episode, count(*), sum(reward) from muscle_actions "
                "group by episode order by episode"
            ).fetchall()
    if [r[0] for r in rows] != list(range(episodes)) or any(r[1] != 200 for r in rows):
        raise SystemExit(f"seed {seed}: expected {episodes} episodes of 200 steps, got {rows}")
    return [float(r[2]) for r in rows], seconds


def verdict(curves: list[list[float]], k: int = 3) -> tuple[bool, float, float]:
    """Whether the median curve improves clearly (see the module's docstring), with the
    medians of the first and last ``k`` episodes."""
    median = [statistics.median(c[i] for c in curves) for i in range(len(curves[0]))]
    first, last = statistics.median(median[:k]), statistics.median(median[-k:])
    every = all(statistics.mean(c[-k:]) > statistics.mean(c[:k]) for c in curves)
    return every and last > first + 0.4 * abs(first), first, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", choices=sorted(BRAINS), default="sac")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at the same time")
    args = parser.parse_args()
    seeds = list(range(1, args.seeds + 1))
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda s: one_seed(args.algorithm, s, args.episodes), seeds))
    total = time.perf_counter() - began
    curves = [r[0] for r in results]

    print(f"harl {args.algorithm.upper()} on Pendulum-v1 (palaestrai-environments' gym wrapper)")
    print(f"{len(seeds)} seeds x {args.episodes} episodes x 200 steps, on palaestra")
    print(f"{'episode':>7}  {'median':>9}  {'min':>9}  {'max':>9}")
    for i in range(args.episodes):
        values = [c[i] for c in curves]
        print(
            f"{i:>7}  {statistics.median(values):>9.1f}  {min(values):>9.1f}  {max(values):>9.1f}"
        )
    improves, first, last = verdict(curves)
    print(
        f"median of the first 3 episodes {first:.1f}, of the last 3 {last:.1f}: "
        + ("improves clearly" if improves else "does NOT improve clearly")
    )
    print(
        "wall time per seed: "
        + ", ".join(f"{r[1]:.0f} s" for r in results)
        + f" (all: {total:.0f} s, {args.jobs} at a time)"
    )
    out = ROOT / "benchmarks" / "results" / "palaestrai_learning.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "algorithm": args.algorithm,
                "seeds": seeds,
                "episodes": args.episodes,
                "curves": curves,
                "seconds": [r[1] for r in results],
                "improves": improves,
                "first3_median": first,
                "last3_median": last,
                "python": platform.python_version(),
            },
            indent=2,
        )
    )
    if not improves:
        sys.exit(1)


if __name__ == "__main__":
    main()
