"""What palaestra hands a Brain or Muscle before ``setup()``: names, seeds, spaces, dumps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode


@dataclass(frozen=True)
class BrainDumps:
    """Where a Brain's dumps go and where its loaded dump comes from.

    Args:
        loaded: The dump this brain starts from (``load:`` in the run file, or the previous
            phase), or None.
        write: Called with ``(data, tag)`` to persist a dump (store and file).
    """

    loaded: bytes | None = None
    write: Callable[[bytes, str], None] | None = None

    def store(self, data: bytes | BinaryIO, tag: str = "") -> None:
        payload = data if isinstance(data, bytes | bytearray) else data.read()
        if self.write is not None:
            self.write(bytes(payload), tag)

    def load(self) -> bytes | None:
        return self.loaded


@dataclass(frozen=True)
class BrainContext:
    """Everything a :class:`~palaestra.agent.brain.Brain` may know about where it runs."""

    name: str
    run_uid: str
    phase_index: int
    phase_name: str
    mode: Mode | str
    """The phase's mode; given as a string, it becomes the :class:`Mode` of that value."""
    seed: int
    sensors: Sequence[SensorInformation]
    actuators: Sequence[ActuatorInformation]
    dumps: BrainDumps = field(default_factory=BrainDumps)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # "train" == Mode.TRAIN


@dataclass(frozen=True)
class MuscleContext:
    """Everything a :class:`~palaestra.agent.muscle.Muscle` may know about where it runs."""

    name: str
    uid: str
    worker: int
    mode: Mode | str
    """The phase's mode; given as a string, it becomes the :class:`Mode` of that value."""
    seed: int
    sensors: Sequence[SensorInformation]
    actuators: Sequence[ActuatorInformation]
    rng: np.random.Generator = field(default_factory=np.random.default_rng)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # "train" == Mode.TRAIN
