"""gymnasium environments for the tests of GymnasiumEnvironment: split spaces, unmappable
spaces, and environments that misbehave on a chosen step."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class SplitSpaces(gym.Env[Any, Any]):
    """A Dict observation (with a nested Tuple) and a Tuple action; ends after 3 steps."""

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {
                "position": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32),
                "cell": spaces.Discrete(5),
                "flags": spaces.Tuple((spaces.MultiBinary(3), spaces.MultiDiscrete([2, 3]))),
            }
        )
        self.action_space = spaces.Tuple((spaces.Discrete(3), spaces.Box(0.0, 1.0, shape=())))
        self.steps = 0
        self.actions: list[Any] = []

    def _obs(self) -> dict[str, Any]:
        return {
            "position": np.array([0.5, -0.5], dtype=np.float32) * (self.steps % 2),
            "cell": self.steps,
            "flags": (np.array([1, 0, self.steps % 2], dtype=np.int8), np.array([1, 2])),
        }

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.actions.append(action)
        self.steps += 1
        return self._obs(), float(action[0]), self.steps >= 3, False, {}


class Misbehaving(gym.Env[Any, Any]):
    """A Box observation that goes wrong (``how``: nan, outside, shape, dtype, raise, reward,
    vector_reward)
    on step ``at`` of every episode."""

    def __init__(self, how: str = "nan", at: int = 2) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.how, self.at, self.steps = how, at, 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict]:
        self.steps += 1
        obs: Any = np.full(2, 0.5, dtype=np.float32)
        reward: Any = 1.0
        if self.steps == self.at:
            if self.how == "raise":
                raise ZeroDivisionError("the simulation diverged")
            if self.how == "nan":
                obs = np.array([0.5, np.nan], dtype=np.float32)
            elif self.how == "outside":
                obs = np.array([0.5, 7.0], dtype=np.float32)
            elif self.how == "shape":
                obs = np.zeros(3, dtype=np.float32)
            elif self.how == "dtype":
                obs = np.zeros(2, dtype=np.float64)
            elif self.how == "reward":
                reward = float("nan")
            elif self.how == "vector_reward":  # a reward per objective, as some envs give
                reward = np.array([1.0, 2.0])
        return obs, reward, False, self.steps >= 6, {}


class TextObservation(gym.Env[Any, Any]):
    """An observation palaestra cannot map: a Dict holding a Text space."""

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {"x": spaces.Discrete(2), "note": spaces.Text(max_length=8)}
        )
        self.action_space = spaces.Discrete(2)


class GraphAction(gym.Env[Any, Any]):
    """An action palaestra cannot map: a Graph space."""

    def __init__(self) -> None:
        self.observation_space = spaces.Discrete(2)
        self.action_space = spaces.Graph(node_space=spaces.Discrete(3), edge_space=None)


def make_split() -> SplitSpaces:
    return SplitSpaces()


def make_misbehaving(how: str = "nan", at: int = 2) -> Misbehaving:
    return Misbehaving(how, at)


def make_text() -> TextObservation:
    return TextObservation()


def make_graph() -> GraphAction:
    return GraphAction()


def make_not_an_env() -> object:
    return object()


class NoFrames(Misbehaving):
    """Takes ``render_mode`` but renders nothing (``render()`` returns None)."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(how="none")
        self.render_mode = render_mode

    def render(self) -> None:
        return None


def make_no_frames(render_mode: str | None = None) -> NoFrames:
    return NoFrames(render_mode)
