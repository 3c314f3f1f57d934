"""Plug-ins that record the CPUs their process may run on (``cpus``, sorted) and how long its
links spin (``spin_us``), for the tests of ``cpu_affinity``, ``spin_us`` and
``writer_priority`` (tests/system/test_cpu_affinity.py): the Muscle and the environment once per
episode, the Brain on its first thought; the environment also the scheduling policy of the
run's store writer (``writer``: ``idle`` or ``other``)."""

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


def writer_policy() -> str:
    """The scheduling policy of the store writer of this process's run: the child of the
    run's executor (an ancestor of this process, titled ``palaestra[Executor...]``) that is
    titled ``palaestra[StoreWriter...]``."""
    processes: dict[int, tuple[int, bytes]] = {}  # by pid: its parent and its title
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                processes[int(entry)] = (ppid, cmdline.read())
        except OSError:  # (a process that ended meanwhile)
            continue
    executor = os.getppid()
    while not processes[executor][1].startswith(b"palaestra[Executor"):
        executor = processes[executor][0]
    for pid, (ppid, title) in processes.items():
        if ppid == executor and title.startswith(b"palaestra[StoreWriter"):
            return "idle" if os.sched_getscheduler(pid) == os.SCHED_IDLE else "other"
    raise LookupError(f"no store writer among the children of the executor {executor}")


class CpuEnvironment(DummyEnvironment):
    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        if self.iter == 0 and self.context is not None:
            record(self.context)
            self.context.record("writer", writer_policy())
        return super().update(actuators)
