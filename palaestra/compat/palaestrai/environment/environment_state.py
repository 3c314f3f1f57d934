"""``palaestrai.environment.environment_state``: what an environment's update returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from palaestra.compat.palaestrai.types.simtime import SimTime
from palaestra.core.information import RewardInformation, SensorInformation

__all__ = ["EnvironmentState"]


@dataclasses.dataclass
class EnvironmentState:
    """palaestrAI's state after a step: sensors, rewards, ``done``, and optionally the world
    state, the simulated time and gymnasium's ``terminated`` / ``truncated``.

    At most one of ``terminated`` and ``truncated`` is true, and either implies ``done``
    (a ValueError otherwise). palaestra reads it as ``(sensor_information, rewards, done)``:
    iterating gives those three.
    """

    sensor_information: list[SensorInformation]
    rewards: list[RewardInformation]
    done: bool
    world_state: Any = None
    simtime: SimTime | None = None
    terminated: bool | None = None
    truncated: bool | None = None

    def __post_init__(self) -> None:
        if self.terminated is True and self.truncated is True:
            raise ValueError(
                "EnvironmentState: terminated and truncated cannot both be True for one step"
            )
        if (self.terminated is True or self.truncated is True) and not self.done:
            raise ValueError(
                "EnvironmentState: terminated or truncated is True, so done must be True too"
            )

    def __iter__(self) -> Iterator[Any]:
        return iter((self.sensor_information, self.rewards, self.done))
