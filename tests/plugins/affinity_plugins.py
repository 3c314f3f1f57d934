"""Plug-ins that record the CPUs their process may run on (``cpus``, sorted) and how long its
links spin (``spin_us``), for the tests of ``cpu_affinity`` and ``spin_us``
(tests/system/test_cpu_affinity.py): the Muscle and the environment once per episode, the Brain
on its first thought."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import ActuatorInformation
from palaestra.core.wire import channel
from palaestra.environment import DummyEnvironment


def cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def record(context: Any) -> None:
    context.record("cpus", cpus())
    context.record("spin_us", round(channel.SPIN_SECONDS * 1e6, 3))


class CpuMuscle(DummyMuscle):
    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        if not getattr(self, "told", False):
            self.told = True
            record(self.context)
        return super().propose_actions(sensors, actuators_available)


class CpuBrain(DummyBrain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if not getattr(self, "told", False):
            self.told = True
            record(self.context)
        return super().thinking(muscle_id, data_from_muscle)


class CpuEnvironment(DummyEnvironment):
    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        if self.iter == 0 and self.context is not None:
            record(self.context)
        return super().update(actuators)
