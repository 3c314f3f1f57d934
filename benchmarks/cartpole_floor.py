"""The floor for the CartPole example: the same PPO in a plain gymnasium loop, one process.

    python benchmarks/cartpole_floor.py [--seed 1] [--episodes 300] [--test-episodes 100]

It imports the learner from ``experiments/cartpole_ppo.py`` (the network, the
hyper-parameters, :class:`PPO`, ``act``), so the only difference from the palaestra run is the
loop around it: one gymnasium environment, the model acting in the same process, no messages,
no store. Trains for ``--episodes`` episodes (sampled actions), then tests the final model for
``--test-episodes`` greedy episodes, and prints JSON: wall time, environment steps and steps/s
of training, each training episode's return, and the test returns with their mean. Needs
gymnasium and torch (``pip install -e '.[gym,torch]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "experiments"), str(ROOT)]  # the example's module, palaestra

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from cartpole_ppo import PPO, Episode, Hyper, act  # noqa: E402

ENV_ID = "CartPole-v1"


def train(seed: int, hyper: Hyper) -> tuple[PPO, list[float], int, float]:
    """Train for ``hyper.episodes`` episodes; the learner, the returns, the steps, seconds."""
    env = gym.make(ENV_ID)
    ppo = PPO(int(env.observation_space.shape[0]), int(env.action_space.n), hyper, seed)
    rng = np.random.default_rng(seed)
    returns: list[float] = []
    steps = 0
    began = time.perf_counter()
    for index in range(hyper.episodes):
        obs, _ = env.reset(seed=seed + index)
        episode = Episode([], [], [], [], truncated=False)
        while True:
            action, logp = act(ppo.model, obs, rng)
            next_obs, reward, terminated, truncated, _ = env.step(action)
            episode.obs.append(obs)
            episode.actions.append(action)
            episode.logps.append(logp)
            episode.rewards.append(float(reward))
            obs = next_obs
            if terminated or truncated:
                break
        episode.truncated = bool(truncated and not terminated)
        episode.final_obs = obs
        steps += len(episode.actions)
        returns.append(sum(episode.rewards))
        ppo.add(episode)
    env.close()
    return ppo, returns, steps, time.perf_counter() - began


def test(ppo: PPO, seed: int, episodes: int) -> list[float]:
    """Greedy returns of ``episodes`` episodes (seeds far from the training ones)."""
    env = gym.make(ENV_ID)
    returns = []
    for index in range(episodes):
        obs, _ = env.reset(seed=10_000 + seed * 1_000 + index)
        total, done = 0.0, False
        while not done:
            action, _ = act(ppo.model, obs, None)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def run(seed: int, episodes: int, test_episodes: int, threads: int = 1) -> dict[str, Any]:
    """Train and test once; the figures as a dict."""
    torch.set_num_threads(threads)
    ppo, returns, steps, seconds = train(seed, Hyper(episodes=episodes))
    tested = test(ppo, seed, test_episodes)
    return {
        "seed": seed,
        "episodes": episodes,
        "train_seconds": round(seconds, 3),
        "train_steps": steps,
        "steps_per_second": round(steps / seconds, 1),
        "updates": ppo.updates,
        "train_returns": returns,
        "test_returns": tested,
        "test_mean": float(np.mean(tested)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--episodes", type=int, default=Hyper.episodes)
    parser.add_argument("--test-episodes", type=int, default=100)
    args = parser.parse_args()
    result = run(args.seed, args.episodes, args.test_episodes)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
