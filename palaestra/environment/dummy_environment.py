"""DummyEnvironment: ten sensors, ten actuators, a reward, and an episode of ``max_iter`` steps."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment import params
from palaestra.environment.environment import Environment


class DummyEnvironment(Environment):
    """A world that ignores its actuators: for exercising and timing the framework.

    Args:
        discrete: Discrete sensors counting the steps (default); else random Box sensors.
        max_iter: Steps per episode.
        step_delay: Seconds each step busy-waits, to emulate an expensive simulation.
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        discrete: bool = True,
        max_iter: int = 10,
        step_delay: float = 0.0,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.discrete = discrete
        where = f"environment '{uid or ''}' (DummyEnvironment)"
        self.max_iter = params.count(where, "max_iter", max_iter)  # (0 failed at its first step)
        self.step_delay = params.seconds(where, "step_delay", step_delay)
        self.iter = 0
        self.sensor_space = Discrete(self.max_iter + 1) if discrete else Box(0, 2, shape=())
        self.actuator_space = Discrete(100) if discrete else Box(0, 10, shape=())
        self.reward_space = Discrete(self.max_iter + 1)

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        self.iter = 0
        return self._sensors(), [
            ActuatorInformation(0, self.actuator_space, str(i)) for i in range(10)
        ]

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        if self.step_delay > 0:
            end = time.perf_counter() + self.step_delay
            while time.perf_counter() < end:
                pass
        self.iter += 1
        reward = RewardInformation(self.iter % self.max_iter, self.reward_space, "Dummy Reward")
        return self._sensors(), [reward], self.iter >= self.max_iter

    def _sensors(self) -> list[SensorInformation]:
        if self.discrete:
            value: Any = self.iter % self.max_iter
        else:
            value = float(self.rng.integers(0, 2))
        return [SensorInformation(value, self.sensor_space, str(i)) for i in range(10)]
