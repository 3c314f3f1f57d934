"""Whether this machine can hold a run's phases: file descriptors and memory, before any start.

A phase runs ``workers × (agents + environments)`` Muscles and environments, one Brain per
agent, one simulation controller per worker, and the run's store writer, all children of the
executor. The executor holds about :data:`FDS_PER_PROCESS` file descriptors for each (its
liveness pipe, its exit sentinel, its control connection) and every child inherits the
executor's descriptors when it is forked; each process needs at least
:data:`MEMORY_PER_PROCESS` of its own memory before its plug-ins allocate anything (measured
on the dummy plug-ins: 6 to 7 MiB of private memory each, the store writer about 40 MiB).

A phase that cannot fit is refused with exit code 2, naming the run file, the phase and the
numbers, instead of failing half-started. A run that needs more descriptors than the soft
``RLIMIT_NOFILE`` but no more than the hard limit gets the soft limit raised for it.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from palaestra.core.description.specs import PhaseSpec, RunSpec
from palaestra.core.errors import InvalidInputError

FDS_BASE = 64
"""Descriptors the executor holds whatever the run (measured: about 15), with room to spare."""
FDS_PER_PROCESS = 5
"""Descriptors the executor holds per child (measured: 4)."""
MEMORY_PER_PROCESS = 7 * 2**20
"""Private memory a child needs at least, plug-ins aside (measured: 6 to 7 MiB)."""
MEMORY_WRITER = 40 * 2**20
"""Private memory of the store writer (measured: about 40 MiB)."""


class CapacityError(InvalidInputError):
    """A run needs more file descriptors or memory than this machine has."""


@dataclass(frozen=True)
class Demand:
    """What one phase needs: processes, file descriptors (per process) and memory (bytes)."""

    processes: int
    fds: int
    memory: int
    breakdown: str


@dataclass(frozen=True)
class Limits:
    """What this machine offers: the ``RLIMIT_NOFILE`` limits and the memory available."""

    fds_soft: int
    fds_hard: int
    memory_available: int | None

    @classmethod
    def of_this_machine(cls) -> Limits:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        unlimited = resource.RLIM_INFINITY
        return cls(
            fds_soft=soft if soft != unlimited else 2**31,
            fds_hard=hard if hard != unlimited else 2**31,
            memory_available=available_memory(),
        )


def demand(phase: PhaseSpec) -> Demand:
    """The processes, file descriptors and memory ``phase`` needs, at least."""
    workers = phase.config.worker
    agents = len(phase.agents)
    environments = len(phase.environments)
    processes = workers * (agents + environments) + agents + workers + 1
    breakdown = (
        f"{workers} workers × ({agents} agents + {environments} environments), "
        f"{agents} Brains, {workers} simulation controllers and the store writer"
    )
    return Demand(
        processes=processes,
        fds=FDS_BASE + FDS_PER_PROCESS * processes,
        memory=MEMORY_PER_PROCESS * (processes - 1) + MEMORY_WRITER,
        breakdown=breakdown,
    )


def check(run: RunSpec, limits: Limits) -> int:
    """Raise :class:`CapacityError` for the first phase of ``run`` that ``limits`` cannot hold.

    Returns the file descriptors the largest phase needs (to raise the soft limit to).
    """
    needed = 0
    for phase in run.phases:
        need = demand(phase)
        where = f"{run.path or run.uid}: phase '{phase.name}'"
        if need.fds > limits.fds_hard:
            raise CapacityError(
                f"{where} needs {need.processes:,} processes ({need.breakdown}) and about "
                f"{need.fds:,} open files, more than this machine allows: RLIMIT_NOFILE is "
                f"{limits.fds_soft:,} (hard limit {limits.fds_hard:,}). Lower "
                f"phase_config.worker, or raise the hard limit (ulimit -Hn)."
            )
        available = limits.memory_available
        if available is not None and need.memory > available:
            raise CapacityError(
                f"{where} needs {need.processes:,} processes ({need.breakdown}): at least "
                f"{_gib(need.memory)} of memory at {_mib(MEMORY_PER_PROCESS)} each before "
                f"the plug-ins allocate anything, but {_gib(available)} is available. "
                f"Lower phase_config.worker."
            )
        needed = max(needed, need.fds)
    return needed


def ensure(runs: list[RunSpec], limits: Limits | None = None) -> None:
    """Refuse runs this machine cannot hold; raise the soft file limit where the runs need it."""
    limits = limits or Limits.of_this_machine()
    needed = max((check(run, limits) for run in runs), default=0)
    if needed > limits.fds_soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, limits.fds_hard))


def available_memory() -> int | None:
    """Bytes of memory available to new processes: the machine's, or the cgroup's if less."""
    available: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    cgroup = _cgroup_room()
    if cgroup is not None and (available is None or cgroup < available):
        return cgroup
    return available


def _cgroup_room() -> int | None:
    """The room left under this process's cgroup v2 memory limit, if it has one."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            path = next(line.split(":", 2)[2].strip() for line in f if line.startswith("0::"))
        base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(base, "memory.max"), encoding="ascii") as f:
            limit = f.read().strip()
        with open(os.path.join(base, "memory.current"), encoding="ascii") as f:
            current = int(f.read())
    except (OSError, ValueError, StopIteration):
        return None
    if limit == "max":
        return None
    return max(0, int(limit) - current)


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"
