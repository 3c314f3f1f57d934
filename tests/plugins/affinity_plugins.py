"""Plug-ins that record the CPUs their process may run on (``cpus``, sorted), for the tests of
``cpu_affinity`` (tests/system/test_cpu_affinity.py): the Muscle and the environment once per
episode, the Brain on its first thought."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import ActuatorInformation
from palaestra.environment import DummyEnvironment


def cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


class CpuMuscle(DummyMuscle):
    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        if not getattr(self, "told", False):
            self.told = True
            self.context.record("cpus", cpus())
        return super().propose_actions(sensors, actuators_available)


class CpuBrain(DummyBrain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if not getattr(self, "told", False):
            self.told = True
            self.context.record("cpus", cpus())
        return super().thinking(muscle_id, data_from_muscle)


class CpuEnvironment(DummyEnvironment):
    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        if self.iter == 0 and self.context is not None:
            self.context.record("cpus", cpus())
        return super().update(actuators)
