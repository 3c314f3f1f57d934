"""Tabular Q-learning on gymnasium's FrozenLake-v1, numpy only: a palaestra agent in one file.

Run it (from the repository root, with ``pip install 'palaestra[gym]'``)::

    palaestra experiment-start experiments/frozenlake_q.yml

The run file trains for a few thousand episodes (phase ``train``), then plays greedily with
the learnt table (phase ``test``, which loads the Brain's dump of the train phase).

How the pieces meet:

* The environment is ``palaestra.environment.gymnasium:GymnasiumEnvironment`` with
  ``env_id: FrozenLake-v1``: one sensor ``lake.obs`` (``Discrete(16)``: the cell), one
  actuator ``lake.action`` (``Discrete(4)``: left, down, right, up), the reward ``reward``
  (1 on reaching the goal, else 0).
* The Muscle acts: epsilon-greedy on the Q table while training, greedy while testing.
* The Brain learns: palaestra calls :meth:`QBrain.thinking` once per step, after it appended
  the Muscle's newest transition to ``self.memory``: the cell the Muscle saw, the action it
  took, the reward that followed and whether that ended the episode. The cell it led to comes
  with the next transition, so the Brain updates the transition before the newest one (and
  the newest one at once when it ended the episode). Its answer, the table and the current
  epsilon, goes to :meth:`QMuscle.update` before the Muscle acts again.
* ``store`` writes the table as a brain dump at the end of every episode; ``load`` (a later
  train phase) and :meth:`QMuscle.prepare_model` (a test phase) read it back.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from palaestra.agent import (
    ActuatorInformation,
    Brain,
    Memory,
    Muscle,
    Objective,
    SensorInformation,
)


def greedy(q_row: np.ndarray, rng: np.random.Generator) -> int:
    """The best action of one row of the table, ties broken at random."""
    best = np.flatnonzero(q_row == q_row.max())
    return int(best[0] if len(best) == 1 else rng.choice(best))


def table_bytes(q: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, q)
    return out.getvalue()


class QBrain(Brain):
    """Learns a Q table from the Muscle's transitions (one-step Q-learning).

    Args:
        alpha: The learning rate.
        gamma: The discount.
        epsilon_start: The exploration rate at the first episode ...
        epsilon_end: ... falling linearly to this ...
        explore_episodes: ... over this many episodes.
    """

    def __init__(
        self,
        alpha: float = 0.1,
        gamma: float = 0.99,
        epsilon_start: float = 1.0,
        epsilon_end: float = 0.05,
        explore_episodes: int = 4000,
    ) -> None:
        self.alpha, self.gamma = alpha, gamma
        self.epsilon_start, self.epsilon_end = epsilon_start, epsilon_end
        self.explore_episodes = explore_episodes
        self.episodes = 0
        self.q = np.zeros((0, 0))
        self.waiting: dict[str, tuple[int, int, float]] = {}  # per Muscle: (cell, action, reward)

    def setup(self) -> None:
        # sensors and actuators are known by now: one Discrete sensor, one Discrete actuator
        if self.q.size == 0:  # not loaded from a dump
            self.q = np.zeros((self.sensors[0].space.n, self.actuators[0].space.n))

    @property
    def epsilon(self) -> float:
        progress = min(1.0, self.episodes / max(1, self.explore_episodes))
        return self.epsilon_start + (self.epsilon_end - self.epsilon_start) * progress

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.mode == "test":
            return None  # nothing to learn; the Muscle acts with the table it loaded
        rows = self.memory.muscle_memory(muscle_id)
        if data_from_muscle != "acted" or not rows:  # the first step of an episode
            return self.q.copy(), self.epsilon
        cell = int(rows.sensor_readings[-1][0].value)  # the newest transition ...
        action = int(rows.actuator_setpoints[-1][0].value)
        reward = float(rows.rewards[-1][0].value)
        done = bool(rows.dones[-1])
        before = self.waiting.pop(muscle_id, None)
        if before is not None:  # ... is where the transition before it led
            self.learn(*before, target=before[2] + self.gamma * self.q[cell].max())
        if done:
            truncated = rows.truncated[-1]  # None where the store of it is not there yet
            if not truncated:  # a terminal cell is worth nothing beyond its reward
                self.learn(cell, action, reward, target=reward)
            self.episodes += 1
        else:
            self.waiting[muscle_id] = (cell, action, reward)
        return self.q.copy(), self.epsilon

    def learn(self, cell: int, action: int, reward: float, target: float) -> None:
        self.q[cell, action] += self.alpha * (target - self.q[cell, action])

    def store(self) -> None:
        self.store_brain_dump(table_bytes(self.q))

    def load(self) -> None:
        dump = self.load_brain_dump()
        if dump is not None:
            self.q = np.load(dump)


class QMuscle(Muscle):
    """Acts on the Q table: epsilon-greedy while training, greedy while testing."""

    def __init__(self) -> None:
        self.q: np.ndarray | None = None
        self.epsilon = 1.0

    def prepare_model(self) -> None:
        # a test phase: the table the train phase stored
        dump = self.load()
        if dump is not None:
            self.q = np.load(dump)
            self.epsilon = 0.0

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        (move,) = actuators_available
        explore = self.mode == "train" and self.rng.random() < self.epsilon
        if self.q is None or explore:
            move(int(self.rng.integers(move.space.n)))
        else:
            move(greedy(self.q[int(sensors[0].value)], self.rng))
        return [move], "acted"

    def update(self, update: Any) -> None:
        self.q, self.epsilon = update


class RewardObjective(Objective):
    """The agent's objective is the environment's reward of the newest step."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        return sum(memory.latest_rewards())
