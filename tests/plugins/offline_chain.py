"""Plug-ins for offline learning (``replay:``): a deterministic chain, an expert that always
takes the right step, and a tabular Q-learning agent that acts greedily on its table.

The chain has positions 0..``length``; at position ``p`` the right move is ``(p + 1) % 2``: it
advances and earns 1, the other move stays and earns 0. An episode is ``length`` steps, so the
expert earns ``length`` per episode. The Q-learner starts with an all-zero table and breaks ties
towards move 0, which is wrong at position 0, so without pre-training it earns 0 in its first
episode; pre-trained on the expert's record it acts as the expert from its first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from palaestra.agent import Brain, Muscle
from palaestra.agent.memory import MuscleMemory
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Discrete
from palaestra.environment.environment import Environment


def right_move(position: int) -> int:
    return (position + 1) % 2


class ChainEnvironment(Environment):
    """Sensors ``position`` and ``steps`` (Discrete), actuator ``move`` (Discrete(2)), reward
    ``step``."""

    def __init__(
        self, uid: str | None = None, broker_uri: str | None = None, seed: int = 0, length: int = 6
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.length = int(length)
        self.position = 0
        self.steps = 0

    def _sensors(self) -> list[SensorInformation]:
        return [
            SensorInformation(self.position, Discrete(self.length + 1), "position"),
            SensorInformation(self.steps, Discrete(self.length + 1), "steps"),
        ]

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.position = self.steps = 0
        return self._sensors(), [ActuatorInformation(0, Discrete(2), "move")]

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        (move,) = actuators
        self.steps += 1
        earned = 0.0
        if int(move.value) == right_move(self.position):
            self.position += 1
            earned = 1.0
        reward = RewardInformation(earned, None, "step")
        return self._sensors(), [reward], self.steps >= self.length


class ExpertMuscle(Muscle):
    """Always the right move."""

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        (actuator,) = actuators_available
        actuator(right_move(int(sensors[0].value)))
        return actuators_available, None


class GreedyMuscle(Muscle):
    """The move of the highest value in its Brain's table (ties: the lower move)."""

    def __init__(self) -> None:
        self.table: dict[str, float] = {}

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        state = int(sensors[0].value)
        (actuator,) = actuators_available
        values = [self.table.get(f"{state},{a}", 0.0) for a in (0, 1)]
        actuator(int(values[1] > values[0]))
        return actuators_available, None

    def update(self, update: Any) -> None:
        if update is not None:
            self.table = update


class QBrain(Brain):
    """Tabular Q-learning on its memory's transitions; answers every step with its table.

    ``pretrain`` learns from every recorded episode ``sweeps`` times (and records how many
    rows it saw as the statistic ``pretrained_rows``); ``thinking`` learns from the Muscle's
    new transitions (a transition is learnt once the next one, or its end, is known).
    """

    def __init__(self, alpha: float = 0.5, gamma: float = 0.9, sweeps: int = 3) -> None:
        self.alpha, self.gamma, self.sweeps = alpha, gamma, sweeps
        self.q: dict[str, float] = {}
        self.learnt: dict[str, int] = {}

    def pretrain(self) -> None:
        rows = 0
        for _ in range(self.sweeps):
            for uid in sorted(self.memory.tags):
                rows += self._learn(self.memory.muscle_memory(uid), 0)
        self.add_statistics("pretrained_rows", rows)

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        rows = self.memory.muscle_memory(muscle_id)
        start = self.learnt.get(muscle_id, 0)
        self.learnt[muscle_id] = start + self._learn(rows, start)
        return dict(self.q)

    def _learn(self, rows: MuscleMemory, start: int) -> int:
        """Learn from rows ``start``..; return how many were learnt."""
        done = 0
        for i in range(start, len(rows)):
            last = bool(rows.dones[i])
            if not last and i + 1 >= len(rows):
                break  # its successor is not known yet
            state = int(rows.sensor_readings[i][0].value)
            move = int(rows.actuator_setpoints[i][0].value)
            reward = sum(float(r.value) for r in rows.rewards[i])
            future = 0.0
            if not last:
                after = int(rows.sensor_readings[i + 1][0].value)
                future = max(self.q.get(f"{after},{a}", 0.0) for a in (0, 1))
            key = f"{state},{move}"
            old = self.q.get(key, 0.0)
            self.q[key] = old + self.alpha * (reward + self.gamma * future - old)
            done += 1
        return done
