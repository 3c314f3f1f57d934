"""Which CPU a run's process runs on, with the runtime config's ``cpu_affinity: worker``; and
the store writer's priority (``writer_priority``, :func:`to_background`).

A rollout worker's processes hand each step to each other, and a message that wakes a process
asleep on another CPU costs an inter-processor interrupt (on a virtual machine, a trip through
the hypervisor): on this project's 2-CPU machines about 35 µs of CPU and 47 µs of time, against
7.5 and 7 on one CPU (``python benchmarks/handover.py``). ``cpu_affinity: worker`` therefore
runs worker ``w``'s processes (environments, Muscles, simulation controller, and with a single
worker the Brains too) on the ``w``-th CPU the executor may use, round the CPUs. The executor
and the store writer stay where the operating system puts them. Runs of a sweep that execute at
once (``--parallel N``) each take every ``N``-th CPU (:func:`share`).

It is not the default: one CPU serialises a worker that plays many games per round, and a Brain
that learns with threads gets one CPU. See ``docs/performance.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence

LOG = logging.getLogger(__name__)


class Affinity:
    """The CPUs of a run's workers: worker ``w`` runs on the ``w``-th of ``cpus`` (sorted),
    round them."""

    __slots__ = ("cpus",)

    def __init__(self, cpus: Iterable[int]) -> None:
        self.cpus = sorted(cpus)
        if not self.cpus:
            raise ValueError("no CPU to run the workers on")

    @classmethod
    def of_this_process(cls) -> Affinity:
        """The CPUs this process may use (all, where the system cannot tell)."""
        if hasattr(os, "sched_getaffinity"):
            return cls(os.sched_getaffinity(0))
        return cls(range(os.cpu_count() or 1))

    def of_worker(self, worker: int) -> tuple[int, ...]:
        """The CPU of worker ``worker``'s processes."""
        return (self.cpus[worker % len(self.cpus)],)


def share(cpus: Sequence[int], slot: int, slots: int) -> tuple[int, ...]:
    """The CPUs of the ``slot``-th of ``slots`` runs that execute at once: every ``slots``-th
    of ``cpus`` from the slot's own on (the slot's, round them, where there are fewer CPUs
    than runs)."""
    ordered = sorted(cpus)
    return tuple(ordered[slot::slots]) or (ordered[slot % len(ordered)],)


def pin(cpus: tuple[int, ...]) -> None:
    """Run every thread of this process (and those it starts) on ``cpus``; none: leave it
    where it is. A system that cannot pin is only logged: the process goes on where it was
    (a thread that ended meanwhile is passed over)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    try:
        _each_thread(lambda thread: os.sched_setaffinity(thread, cpus))
    except OSError as exc:
        LOG.warning("could not run on CPU %s: %s", ",".join(map(str, cpus)), exc)


def to_background() -> None:
    """Run every thread of this process (and those it starts) only on a CPU that no other
    process wants: Linux's ``SCHED_IDLE`` (a process of normal priority that wakes takes the CPU
    from it at once); where the system has no such policy, niceness 19. The runtime config's
    ``writer_priority: background`` runs the store writer so (figures in
    ``docs/performance.md``). A system that refuses is only logged."""
    idle = getattr(os, "SCHED_IDLE", None)
    try:
        if idle is None or not hasattr(os, "sched_setscheduler"):
            os.setpriority(os.PRIO_PROCESS, 0, 19)  # (macOS: the process's threads)
            return
        _each_thread(lambda thread: os.sched_setscheduler(thread, idle, os.sched_param(0)))
    except OSError as exc:
        LOG.warning("could not run in the background: %s", exc)


def _each_thread(change: Callable[[int], object]) -> None:
    """``change`` each thread of this process (by its id; 0, this one, where the system does
    not list them), passing over one that ended meanwhile."""
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for thread in threads:
        try:
            change(thread)
        except ProcessLookupError:  # the thread ended
            continue
