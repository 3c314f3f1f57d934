"""CartPole: gymnasium's CartPole-v1 task in plain numpy, an environment without gymnasium.

The dynamics, bounds, start distribution, reward and time limit are those of gymnasium's
``CartPole-v1`` (Barto, Sutton and Anderson's cart-pole, Euler integration): a pole on a cart
that a force of 10 N pushes left (action 0) or right (action 1), a reward of 1 per step, the
episode *terminated* when the pole leans over 12 degrees or the cart leaves ±2.4, *truncated*
after ``max_steps`` (500). It is cheap, so it measures what a framework costs per step (see
``benchmarks/vector_envs.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment.environment import BatchState, Environment, EnvironmentState

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_LENGTH = 0.5  # of the pole
POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
FORCE = 10.0
TAU = 0.02  # seconds per step
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4
_HIGH = np.array(
    [X_LIMIT * 2, np.finfo(np.float32).max, THETA_LIMIT * 2, np.finfo(np.float32).max],
    dtype=np.float32,
)


class CartPole(Environment):
    """gymnasium's CartPole-v1 without gymnasium.

    Sensor ``state`` (a Box of 4: cart position, cart velocity, pole angle, pole angular
    velocity), actuator ``push`` (Discrete(2): 0 left, 1 right), reward ``reward`` (1.0 per
    step). Each episode starts from a state drawn uniformly from ±0.05 with the environment's
    :attr:`rng` (seeded with its seed).

    Args:
        max_steps: Steps after which an episode is truncated (CartPole-v1: 500).
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        max_steps: int = 500,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.max_steps = int(max_steps)
        self.state_space = Box(-_HIGH, _HIGH, shape=(4,), dtype=np.float32)
        self.push_space = Discrete(2)
        self.reward_space = Box(0.0, 1.0, shape=())
        self.state = np.zeros(4)
        self.steps = 0

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return [self._sensor()], [ActuatorInformation(0, self.push_space, "push")]

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        push = int(actuators[0].value) if actuators else 0
        x, x_dot, theta, theta_dot = self.state.tolist()
        force = FORCE if push == 1 else -FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS)
        )
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        x += TAU * x_dot
        x_dot += TAU * x_acc
        theta += TAU * theta_dot
        theta_dot += TAU * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        terminated = x < -X_LIMIT or x > X_LIMIT or theta < -THETA_LIMIT or theta > THETA_LIMIT
        truncated = not terminated and self.steps >= self.max_steps
        return EnvironmentState(
            [self._sensor()],
            [RewardInformation(1.0, self.reward_space, "reward")],
            terminated or truncated,
            terminated=terminated,
            truncated=truncated,
        )

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        """Step every game in ``games`` at once: :meth:`update`'s arithmetic on arrays, in
        the same order of operations (so each game's values are bit for bit those of
        :meth:`update`; cosine and sine come from :mod:`math` as there)."""
        poles: list[CartPole] = list(games)  # type: ignore[arg-type]
        count = len(poles)
        state = np.array([pole.state for pole in poles], dtype=np.float64).reshape(count, 4)
        x, x_dot, theta, theta_dot = state.T
        pushes = setpoints.get("push")
        push = np.zeros(count, dtype=np.int64) if pushes is None else np.asarray(pushes)
        force = np.where(push == 1, FORCE, -FORCE)
        angles = theta.tolist()
        cos = np.array([math.cos(a) for a in angles])
        sin = np.array([math.sin(a) for a in angles])
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS)
        )
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        new = np.empty_like(state)
        new[:, 0] = x + TAU * x_dot
        new[:, 1] = x_dot + TAU * x_acc
        new[:, 2] = theta + TAU * theta_dot
        new[:, 3] = theta_dot + TAU * theta_acc
        steps = np.empty(count, dtype=np.int64)
        limits = np.empty(count, dtype=np.int64)
        for k, pole in enumerate(poles):
            pole.state = new[k]
            pole.steps += 1
            steps[k], limits[k] = pole.steps, pole.max_steps
        nx, ntheta = new[:, 0], new[:, 2]
        terminated = (
            (nx < -X_LIMIT) | (nx > X_LIMIT) | (ntheta < -THETA_LIMIT) | (ntheta > THETA_LIMIT)
        )
        truncated = ~terminated & (steps >= limits)
        first = poles[0]
        return BatchState(
            [SensorInformation(new.astype(np.float32), first.state_space, "state")],
            [RewardInformation(np.ones(count), first.reward_space, "reward")],
            terminated,
            truncated,
        )

    def _sensor(self) -> SensorInformation:
        return SensorInformation(self.state.astype(np.float32), self.state_space, "state")
