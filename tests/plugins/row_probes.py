"""Plug-ins for the tests of the rows on their way to the store (see tests/system/test_rows.py).

:class:`FailAtStepMuscle` raises in ``propose_actions`` on its ``at``-th call;
:class:`CountingMuscle` keeps the number of its ``propose_actions`` calls in a file;
:class:`OpaqueSetpointMuscle` sets an actuator to a value with no JSON form on its ``at``-th
call; :class:`OpaqueSensorEnvironment` reports a sensor value with no JSON form on its
``at``-th step; :class:`BigObservationEnvironment` reports a ``size``-byte sensor per step.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from palaestra.agent import DummyMuscle
from palaestra.core.information import SensorInformation
from palaestra.core.spaces import Box
from palaestra.environment import DummyEnvironment


class Opaque:
    """A value no store can hold."""

    def __repr__(self) -> str:
        return "<Opaque>"


class FailAtStepMuscle(DummyMuscle):
    def __init__(self, at: int = 3, **params: Any) -> None:
        super().__init__(**params)
        self.at = at
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        if self.calls >= self.at:
            raise RuntimeError(f"planned failure at call {self.calls}")
        return super().propose_actions(sensors, actuators_available)


class CountingMuscle(DummyMuscle):
    """DummyMuscle that keeps the number of its ``propose_actions`` calls in the file
    ``path`` (rewritten at each call): how far it got when the run stopped."""

    def __init__(self, path: str = "", **params: Any) -> None:
        super().__init__(**params)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        os.pwrite(self.fd, f"{self.calls:>12}".encode(), 0)
        return super().propose_actions(sensors, actuators_available)


class OpaqueSetpointMuscle(DummyMuscle):
    """On call ``at``, sets its last actuator to an :class:`Opaque` value (its space is
    dropped, so nothing converts it)."""

    def __init__(self, at: int = 3, **params: Any) -> None:
        super().__init__(**params)
        self.at = at
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        setpoints, data = super().propose_actions(sensors, actuators_available)
        if self.calls == self.at:
            last = setpoints[-1]
            last.space = None
            last.value = Opaque()
        return setpoints, data


class OpaqueSensorEnvironment(DummyEnvironment):
    """A DummyEnvironment whose sensor ``uid`` (no space) reads :class:`Opaque` on step ``at``
    (0 before)."""

    def __init__(self, at: int = 3, uid_opaque: str = "9", **params: Any) -> None:
        super().__init__(**params)
        self.at = at
        self.uid_opaque = uid_opaque

    def _sensors(self) -> list[SensorInformation]:
        sensors = super()._sensors()
        value: Any = Opaque() if self.iter == self.at else 0
        sensors[int(self.uid_opaque)] = SensorInformation(value, None, self.uid_opaque)
        return sensors


class BigObservationEnvironment(DummyEnvironment):
    """A DummyEnvironment whose sensor ``0`` is a vector of ``size`` float64 (``8 * size``
    bytes) in a Box space, new each step."""

    def __init__(self, size: int = 1000, **params: Any) -> None:
        super().__init__(**params)
        self.size = int(size)
        self.big_space = Box(0.0, 1.0, shape=(self.size,))

    def _sensors(self) -> list[SensorInformation]:
        sensors = super()._sensors()
        value = np.full(self.size, (self.iter % 100) / 100.0)
        sensors[0] = SensorInformation(value, self.big_space, "0")
        return sensors
