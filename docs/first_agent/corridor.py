"""A first agent from scratch: a corridor of five cells and a Q-learning agent that learns to
walk right, in one file. Run it from the repository root:

    palaestra experiment-start docs/first_agent/corridor.yml
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
    RewardInformation,
    SensorInformation,
)
from palaestra.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.types import Discrete

CELLS, LEFT, RIGHT = 5, 0, 1


class Corridor(Environment):
    """Start in cell 0; the episode ends with reward 1 in the last cell, or after 20 steps."""

    def start_environment(self) -> EnvironmentBaseline:
        self.cell, self.steps = 0, 0
        return EnvironmentBaseline(
            [SensorInformation(self.cell, Discrete(CELLS), "cell")],
            [ActuatorInformation(LEFT, Discrete(2), "move")],
        )

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        step = 1 if actuators[0].value == RIGHT else -1
        self.cell = min(CELLS - 1, max(0, self.cell + step))
        self.steps += 1
        arrived = self.cell == CELLS - 1
        return EnvironmentState(
            [SensorInformation(self.cell, Discrete(CELLS), "cell")],
            [RewardInformation(int(arrived), Discrete(2), "reward")],
            arrived or self.steps == 20,
            terminated=arrived,
            truncated=not arrived and self.steps == 20,
        )


class QMuscle(Muscle):
    """Acts: the best move of its Q table for the cell it is in, or at random while exploring."""

    def __init__(self) -> None:
        self.q = np.zeros((CELLS, 2))
        self.epsilon = 1.0

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        (move,) = actuators_available
        if self.mode == "train" and self.rng.random() < self.epsilon:
            move(int(self.rng.integers(2)))
        else:
            move(int(np.argmax(self.q[int(sensors[0].value)])))
        return [move], None

    def update(self, update: Any) -> None:  # what the Brain's thinking returned
        self.q, self.epsilon = update

    def prepare_model(self) -> None:  # a test phase: the table the train phase stored
        dump = self.load()
        if dump is not None:
            self.q, self.epsilon = np.load(dump), 0.0


class QBrain(Brain):
    """Learns: one step of Q-learning per transition the Muscle completes."""

    def __init__(self, alpha: float = 0.5, gamma: float = 0.9) -> None:
        self.alpha, self.gamma = alpha, gamma
        self.q = np.zeros((CELLS, 2))
        self.episodes = 0
        self.before: tuple[int, int, float] | None = None  # waiting for the cell it led to

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.mode == "test":  # nothing to learn: the Muscle walks with the table it loaded
            return None
        rows = self.memory.muscle_memory(muscle_id)
        if not rows:  # the first step of an episode: no transition yet
            return self.q.copy(), self.epsilon
        cell = int(rows.sensor_readings[-1][0].value)
        move = int(rows.actuator_setpoints[-1][0].value)
        reward = float(rows.rewards[-1][0].value)
        if self.before is not None:  # the transition before this one led to `cell`
            was, did, got = self.before
            target = got + self.gamma * self.q[cell].max()
            self.q[was, did] += self.alpha * (target - self.q[was, did])
        self.before = (cell, move, reward)
        if rows.dones[-1]:  # the episode ended: nothing follows the last transition
            self.q[cell, move] += self.alpha * (reward - self.q[cell, move])
            self.before, self.episodes = None, self.episodes + 1
        return self.q.copy(), self.epsilon

    @property
    def epsilon(self) -> float:  # explore less as it learns
        return max(0.05, 1.0 - self.episodes / 100)

    def store(self) -> None:  # a brain dump at every episode's end: the table
        out = io.BytesIO()
        np.save(out, self.q)
        self.store_brain_dump(out.getvalue())


class RewardObjective(Objective):
    """The agent's objective: the environment's reward."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        return float(sum(memory.latest_rewards()))
