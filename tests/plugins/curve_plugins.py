"""Plug-ins whose episode rewards and statistics vary, for the curve and export tests.

``ImprovingEnvironment`` gives rewards that grow with the episode (with seeded noise) over
episodes of seeded random length; ``StatisticMuscle`` records numbers, a string and a list as
statistics at every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment.environment import Environment


class ImprovingEnvironment(Environment):
    """One sensor and one actuator; an episode of 2 to ``max_iter`` steps whose rewards are the
    episode's number (from 0 in this worker) plus uniform noise in [0, 1)."""

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        max_iter: int = 6,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.max_iter = int(max_iter)
        self.episode = -1
        self.length = 0
        self.iter = 0

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.episode += 1
        self.iter = 0
        self.length = int(self.rng.integers(2, self.max_iter + 1))
        return self._sensors(), [ActuatorInformation(0, Discrete(4), "act")]

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        self.iter += 1
        value = self.episode + float(self.rng.random())
        reward = RewardInformation(value, Box(-1e9, 1e9, shape=()), "gain")
        return self._sensors(), [reward], self.iter >= self.length

    def _sensors(self) -> list[SensorInformation]:
        return [SensorInformation(self.iter, Discrete(self.max_iter + 1), "step")]


class StatisticMuscle(DummyMuscle):
    """Acts as DummyMuscle; records ``explore`` (a number falling with its steps), ``note`` (a
    string) and ``vector`` (a list) at every step."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.steps = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.steps += 1
        self.add_statistics("explore", 1.0 / self.steps)
        self.add_statistics("note", "hello")
        self.add_statistics("vector", [1, 2])
        return super().propose_actions(sensors, actuators_available)
