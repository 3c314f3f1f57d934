"""Plug-ins for the tests of how episodes end (see tests/system/test_episodes.py).

:class:`EndsEnvironment` ends its even episodes (counted per worker) in a terminal state after
``terminate_at`` steps and truncates its odd ones after ``truncate_at``; each step's reward is
the step's number. :class:`EndsObjective` makes the objective of a transition tell what the
Muscle's memory says of its end, and :class:`EndsBrain` records what the Brain's memory says
(``memory.tail()`` and the per-muscle memory) as statistics of the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyBrain
from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment.environment import Environment, EnvironmentState

CODES = {(None, None): -1.0, (False, False): 0.0, (True, False): 1.0, (False, True): 2.0}
"""The objective :class:`EndsObjective` gives for (terminated, truncated) of a transition."""


class EndsEnvironment(Environment):
    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        terminate_at: int = 3,
        truncate_at: int = 5,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.terminate_at = terminate_at
        self.truncate_at = truncate_at
        self.episode = -1
        self.iter = 0

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.episode += 1
        self.iter = 0
        return self._sensors(), [ActuatorInformation(0, Discrete(10), "a")]

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        self.iter += 1
        terminated = self.episode % 2 == 0 and self.iter >= self.terminate_at
        truncated = self.episode % 2 == 1 and self.iter >= self.truncate_at
        reward = RewardInformation(float(self.iter), Box(0, 100, shape=()), "r")
        return EnvironmentState(
            self._sensors(),
            [reward],
            terminated or truncated,
            terminated=terminated,
            truncated=truncated,
        )

    def _sensors(self) -> list[SensorInformation]:
        return [SensorInformation(self.iter, Discrete(100), "s")]


class EndsObjective(Objective):
    """The objective is :data:`CODES` of the newest row's ``terminated``/``truncated``."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        shard = memory.tail(1)
        terminated = None if shard.terminated is None else bool(shard.terminated[-1])
        truncated = None if shard.truncated is None else bool(shard.truncated[-1])
        return CODES[(terminated, truncated)]


class EndsBrain(DummyBrain):
    """Records ``ends`` (``memory.tail()`` of the Muscle) and ``muscle_ends`` (its rows in
    ``muscle_memory``): :data:`CODES` of the Muscle's newest row, once it has one."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        own = self.memory.muscle_memory(muscle_id)
        if len(own):
            shard = self.memory.tail(1, include_only=muscle_id)
            if shard.terminated is None or shard.truncated is None:
                ends = (None, None)
            else:
                ends = (bool(shard.terminated[-1]), bool(shard.truncated[-1]))
            self.add_statistics("ends", CODES[ends])
            self.add_statistics("muscle_ends", CODES[(own.terminated[-1], own.truncated[-1])])
        return super().thinking(muscle_id, data_from_muscle)
