"""Asynchronous environments for the tests: a world that runs as a task on the environment's
event loop, as palaestrai-mosaik's mosaik world does, and ways for it to fail."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import numpy as np

from palaestra.agent import Muscle
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment import Environment


class WorldEnvironment(Environment):
    """``update`` hands the set point to a world task started by ``start_environment`` and
    awaits the world's answer; the sensor ``t`` is the world's step count.

    Args:
        steps: Steps per episode.
        fail_at: ``update`` raises at this step of an episode (0: never).
        hang_at: ``update`` waits for ever at this step (0: never).
        die_at: the world task raises at this step (0: never).
        child: start a child process (``sleep``) that the environment never ends.
        mark: a file ``shutdown`` appends a line to once it has stopped the world.
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        steps: int = 5,
        fail_at: int = 0,
        hang_at: int = 0,
        die_at: int = 0,
        child: bool = False,
        mark: str = "",
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.steps = int(steps)
        self.fail_at, self.hang_at, self.die_at = int(fail_at), int(hang_at), int(die_at)
        self.child = bool(child)
        self.mark = mark
        self.world: asyncio.Task[None] | None = None
        self.inbox: asyncio.Queue[Any] | None = None
        self.outbox: asyncio.Queue[int] | None = None
        self.t = 0
        self.process: Any = None

    async def start_environment(self) -> Any:
        if self.world is not None:  # a new episode: a new world, as reset does for mosaik
            await self._stop_world()
        self.t = 0
        self.inbox, self.outbox = asyncio.Queue(), asyncio.Queue()
        self.world = asyncio.create_task(self._world(), name="world")
        if self.child and self.process is None:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "import time; time.sleep(600)"
            )
        return [SensorInformation(0, Discrete(self.steps + 1), "t")], [
            ActuatorInformation(0, Discrete(2), "push")
        ]

    async def _world(self) -> None:
        assert self.inbox is not None and self.outbox is not None
        while True:
            await self.inbox.get()
            self.t += 1
            if self.t == self.die_at:
                raise RuntimeError(f"the world broke down at step {self.t}")
            await self.outbox.put(self.t)

    async def update(self, actuators: list[ActuatorInformation]) -> Any:
        assert self.inbox is not None and self.outbox is not None
        step = self.t + 1
        if step == self.fail_at:
            raise ValueError(f"update failed at step {step}")
        if step == self.hang_at:
            await asyncio.Event().wait()
        await self.inbox.put(actuators[0].value)
        t = await self.outbox.get()
        sensors = [SensorInformation(t, Discrete(self.steps + 1), "t")]
        rewards = [RewardInformation(float(t), Box(0, self.steps, shape=()), "progress")]
        return sensors, rewards, t >= self.steps

    async def _stop_world(self) -> None:
        if self.world is not None:
            self.world.cancel()
            await asyncio.gather(self.world, return_exceptions=True)

    async def shutdown(self) -> bool:
        await self._stop_world()
        if self.mark:
            with open(self.mark, "a", encoding="utf-8") as f:
                f.write(f"worker {self.context.worker if self.context else 0}: {self.t}\n")
        return True


class SyncReturnsCoroutine(WorldEnvironment):
    """A plain ``def update`` that returns the coroutine of an ``async`` helper (palaestrAI
    awaits what the method returns, so this runs there too)."""

    def update(self, actuators: list[ActuatorInformation]) -> Any:  # type: ignore[override]
        return WorldEnvironment.update(self, actuators)


class AsyncMuscle(Muscle):
    """A Muscle whose ``propose_actions`` is a coroutine function: palaestra would not await
    it, so the run-file check refuses it."""

    async def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:  # type: ignore[override]
        return actuators_available, None


def shutdown_lines(mark: Path) -> list[str]:
    return mark.read_text().splitlines() if mark.exists() else []


class UnsetValues(Environment):
    """midas-powergrid's way with values: an integer sensor with infinite bounds
    (``Box(-inf, inf, (1,), int32)``) that reads None until the grid has run a step, and
    integer actuators whose values start as None (``in_service``, ``tap_pos``)."""

    def __init__(self, uid: str | None = None, broker_uri: str | None = None, seed: int = 0):
        super().__init__(uid, broker_uri, seed)
        self.t = 0
        self.tap_space = Box(-np.inf, np.inf, shape=(1,), dtype=np.int32)

    def _sensors(self, tap: Any) -> list[SensorInformation]:
        return [
            SensorInformation(tap, self.tap_space, "tap_pos"),
            SensorInformation(None if self.t == 0 else 1.5, Box(0.0, 2.0, shape=(1,)), "vm"),
        ]

    def start_environment(self) -> Any:
        self.t = 0
        return self._sensors(None), [
            ActuatorInformation(None, Discrete(2), "in_service"),
            ActuatorInformation(None, Box(-5, 5, shape=(1,), dtype=np.int32), "tap_set"),
        ]

    def update(self, actuators: list[ActuatorInformation]) -> Any:
        self.t += 1
        tap = actuators[1].value
        reading = None if tap is None else np.asarray(tap, dtype=np.int32).reshape(1)
        rewards = [RewardInformation(0.0, Box(-1.0, 1.0, shape=()), "r")]
        return self._sensors(reading), rewards, self.t >= 4


class SetsOnlyTheFirst(Muscle):
    """Sets the first actuator and leaves the others as they come (None here)."""

    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        actuators_available[0](1)
        return actuators_available, None
