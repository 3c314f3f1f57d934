"""Which CPU a run's process runs on, with the runtime config's ``cpu_affinity: worker``; and
the store writer's priority (``writer_priority``, :func:`to_background`).

The processes of a rollout worker hand each step to each other: the environment's state to
the Muscles, a Muscle's experience to its Brain and the answers back. A process waiting for
its peer sleeps; the peer's message wakes it, and where it sleeps on another CPU that costs an
inter-processor interrupt, which on a virtual machine is a trip through the hypervisor. With
one game per worker and ``update_lag`` 0 those hand-overs are most of a step: on the 2-CPU
virtual machines of this project a message between two processes on different CPUs costs
about 35 µs of CPU (both processes together) and 47 µs of time, on one CPU about 7.5 and 7
(``python benchmarks/handover.py``).
``cpu_affinity: worker`` therefore runs each worker's processes on one CPU, worker ``w`` on
the ``w``-th CPU the executor may use (round the CPUs when there are more workers): its
environments, its Muscles and its simulation controller, and with a single worker the Brains
too (a Brain serves the Muscles of every worker). The executor and the store writer stay where
the operating system puts them. Runs of a sweep that execute at once (``--parallel N``) each
take every ``N``-th CPU (:func:`share`), so their workers do not pile onto the first ones.

It is not the default: a worker that plays many games per round (``envs_per_worker``) has its
processes work at once, which one CPU serialises, and a Brain that learns with threads
(PyTorch's) gets one CPU. See ``docs/performance.md`` for the figures of both.
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
    process wants: Linux's ``SCHED_IDLE`` (a minimal share of a CPU that others keep busy, and a
    process of normal priority that wakes takes the CPU from it at once); where the system
    has no such policy, the lowest priority (niceness 19). The runtime config's
    ``writer_priority: background`` runs the store writer so: on the 2-CPU machines of this
    project a worker of 64 CartPole games then played 1.04 to 1.13 times as many steps a
    second (``benchmarks/round_trace.py``: the hand-overs between the worker's processes
    waited less for a CPU the writer held). A system that refuses is only logged."""
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
