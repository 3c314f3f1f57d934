"""Whether this machine can hold a run's phases: file descriptors, memory and threads, before
any start.

A phase runs ``workers × (agents + environments)`` Muscles and environments, one Brain per
agent, one simulation controller per worker, and the run's store writer, all children of the
executor. The executor holds about :data:`FDS_PER_PROCESS` file descriptors for each (its
liveness pipe, its exit sentinel, its control connection) and every child inherits the
executor's descriptors when it is forked; each process needs at least
:data:`MEMORY_PER_PROCESS` of its own memory before its plug-ins allocate anything (measured
on the dummy plug-ins: 6 to 7 MiB of private memory each, the store writer about 40 MiB), and
starts at least :data:`THREADS_PER_PROCESS` threads, each a task that counts against the user's
``RLIMIT_NPROC`` (``ulimit -u``, which binds every user but root: a shared login node's may be a
few hundred) and its cgroup's ``pids.max`` (a container's, a job's). A process that cannot
start a thread dies as it starts (ZeroMQ aborts), and the run fails naming that death.

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
THREADS_PER_PROCESS = 4
"""Threads a child starts at least, plug-ins aside (measured: 5, the store writer 4)."""
SCAN_BELOW = 8192
"""A user's ``RLIMIT_NPROC`` below this is compared with the tasks the user runs (read from
``/proc``, a few milliseconds); above it no run of this machine's size comes near it."""


class CapacityError(InvalidInputError):
    """A run needs more file descriptors or memory than this machine has."""


@dataclass(frozen=True)
class Demand:
    """What one phase needs: processes, file descriptors (per process) and memory (bytes)."""

    processes: int
    fds: int
    memory: int
    breakdown: str
    threads: int = 0


@dataclass(frozen=True)
class Limits:
    """What this machine offers: the ``RLIMIT_NOFILE`` limits and the memory available."""

    fds_soft: int
    fds_hard: int
    memory_available: int | None
    tasks_room: int | None = None
    """How many more tasks (threads) may start (None: no limit comes near)."""
    tasks_limit: str = ""
    """The limit that leaves ``tasks_room``, in words."""

    @classmethod
    def of_this_machine(cls) -> Limits:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        unlimited = resource.RLIM_INFINITY
        room, limit = task_room()
        return cls(
            fds_soft=soft if soft != unlimited else 2**31,
            fds_hard=hard if hard != unlimited else 2**31,
            memory_available=available_memory(),
            tasks_room=room,
            tasks_limit=limit,
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
        threads=THREADS_PER_PROCESS * processes,
    )


def check(run: RunSpec, limits: Limits) -> int:
    """Raise :class:`CapacityError` for the first phase of ``run`` that ``limits`` cannot hold.

    Returns the file descriptors the largest phase needs (to raise the soft limit to).
    """
    needed = 0
    for phase in run.phases:
        need = demand(phase)
        needs = f"{run.path or run.uid}: phase '{phase.name}' needs {need.processes:,} processes"
        needs += f" ({need.breakdown})"
        if need.fds > limits.fds_hard:
            raise CapacityError(
                f"{needs} and about {need.fds:,} open files, more than this machine allows: "
                f"RLIMIT_NOFILE is {limits.fds_soft:,} (hard limit {limits.fds_hard:,}). Lower "
                f"phase_config.worker, or raise the hard limit (ulimit -Hn)."
            )
        available = limits.memory_available
        if available is not None and need.memory > available:
            raise CapacityError(
                f"{needs}: at least {_gib(need.memory)} of memory at "
                f"{_mib(MEMORY_PER_PROCESS)} each before the plug-ins allocate anything, but "
                f"{_gib(available)} is available. Lower phase_config.worker."
            )
        room = limits.tasks_room
        if room is not None and need.threads > room:
            raise CapacityError(
                f"{needs} with at least {need.threads:,} threads ({THREADS_PER_PROCESS} each), "
                f"but only {room:,} more may start here: {limits.tasks_limit}. Lower "
                f"phase_config.worker, or raise the limit."
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


def task_room(uid: int | None = None) -> tuple[int | None, str]:
    """How many more tasks this user may start, and the limit that says so: the cgroup's
    ``pids.max`` (which binds root too), or ``RLIMIT_NPROC`` less the tasks the user runs
    (which binds every user but root), whichever leaves less; (None, "") where neither comes
    near a run (:data:`SCAN_BELOW`)."""
    uid = os.getuid() if uid is None else uid
    found: list[tuple[int, str]] = []
    pids = _cgroup_pids()
    if pids is not None:
        most, current = pids
        said = f"the cgroup's pids.max is {most:,}, {current:,} in use"
        found.append((max(0, most - current), said))
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if uid != 0 and soft != resource.RLIM_INFINITY and soft < SCAN_BELOW:
        running = user_tasks(uid)
        said = f"ulimit -u (RLIMIT_NPROC) is {soft:,} for uid {uid}, which runs {running:,} tasks"
        found.append((max(0, soft - running), said))
    if not found:
        return None, ""
    return min(found)


def user_tasks(uid: int) -> int:
    """The tasks (threads) of the processes whose real user is ``uid``: what the kernel
    counts against its ``RLIMIT_NPROC``."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):  # (a process that ended)
            continue
    return count


def _cgroup_pids() -> tuple[int, int] | None:
    """This process's cgroup's ``pids.max`` and ``pids.current`` (v2, or v1's pids
    controller), if it has a limit."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = [line.strip().split(":", 2) for line in f]
    except OSError:
        return None
    for hierarchy, controllers, path in lines:
        if hierarchy == "0" and not controllers:
            base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        elif "pids" in controllers.split(","):
            base = os.path.join("/sys/fs/cgroup/pids", path.lstrip("/"))
        else:
            continue
        try:
            with open(os.path.join(base, "pids.max"), encoding="ascii") as f:
                most = f.read().strip()
            with open(os.path.join(base, "pids.current"), encoding="ascii") as f:
                current = int(f.read())
        except (OSError, ValueError):
            continue
        if most != "max":
            return int(most), current
    return None


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"
