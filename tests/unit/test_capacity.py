"""The capacity check: what a phase needs, and the refusal of what a machine cannot hold."""

from __future__ import annotations

import os
import resource
import threading

import pytest

from palaestra.core.description.specs import (
    AgentSpec,
    ClassSpec,
    EnvironmentSpec,
    PhaseConfig,
    PhaseSpec,
    RunSpec,
    SimulationSpec,
)
from palaestra.core.errors import EXIT_INVALID_INPUT
from palaestra.experiment import capacity
from palaestra.experiment.capacity import CapacityError, Limits, demand

GiB = 2**30


def phase(workers: int, agents: int = 2, environments: int = 1, name: str = "p") -> PhaseSpec:
    cls = ClassSpec(name="x:Y")
    return PhaseSpec(
        index=0,
        name=name,
        environments=tuple(
            EnvironmentSpec(name="x:Env", uid=f"env{i}") for i in range(environments)
        ),
        agents=tuple(
            AgentSpec(name=f"a{i}", brain=cls, muscle=cls, objective=cls, sensors=(), actuators=())
            for i in range(agents)
        ),
        simulation=SimulationSpec(name="x:Sim"),
        config=PhaseConfig(worker=workers),
    )


def run(*phases: PhaseSpec) -> RunSpec:
    return RunSpec(uid="r", experiment_uid="e", seed=0, version="1", phases=phases, path="r.yml")


def test_a_phase_needs_a_muscle_and_an_environment_per_worker_a_brain_per_agent() -> None:
    need = demand(phase(workers=300, agents=2, environments=1))
    # 300 × (2 + 1) + 2 Brains + 300 simulation controllers + 1 writer
    assert need.processes == 1203
    assert need.fds == capacity.FDS_BASE + capacity.FDS_PER_PROCESS * 1203
    assert need.memory == capacity.MEMORY_PER_PROCESS * 1202 + capacity.MEMORY_WRITER
    assert "300 workers × (2 agents + 1 environments)" in need.breakdown


def test_what_fits_passes_and_reports_the_descriptors_needed() -> None:
    limits = Limits(fds_soft=1024, fds_hard=4096, memory_available=64 * GiB)
    small, big = phase(1, name="small"), phase(100, name="big")
    assert capacity.check(run(small, big), limits) == demand(big).fds
    assert demand(big).fds > 1024  # more than the soft limit: ensure() raises it


def test_too_many_descriptors_is_refused_naming_the_phase_and_the_numbers() -> None:
    limits = Limits(fds_soft=1024, fds_hard=4096, memory_available=None)
    with pytest.raises(CapacityError) as caught:
        capacity.check(run(phase(1, name="warmup"), phase(400, name="train")), limits)
    message = caught.value.format_message()
    assert caught.value.exit_code == EXIT_INVALID_INPUT
    assert message.startswith("r.yml: phase 'train' needs 1,603 processes")
    assert "RLIMIT_NOFILE is 1,024 (hard limit 4,096)" in message
    assert "phase_config.worker" in message


def test_too_little_memory_is_refused_naming_the_phase_and_the_numbers() -> None:
    limits = Limits(fds_soft=2**20, fds_hard=2**20, memory_available=1 * GiB)
    with pytest.raises(CapacityError) as caught:
        capacity.check(run(phase(300, name="train")), limits)
    message = caught.value.format_message()
    assert "phase 'train' needs 1,203 processes" in message
    assert "8.3 GiB of memory" in message and "but 1.0 GiB is available" in message


def test_the_soft_descriptor_limit_is_raised_to_what_the_runs_need() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = demand(phase(20)).fds
    if need > hard:
        pytest.skip("this machine's hard limit is too low for the example")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need - 1, hard))
        capacity.ensure([run(phase(20))])
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (need, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_too_few_threads_left_is_refused_naming_the_phase_the_limit_and_the_numbers() -> None:
    """Under ``ulimit -u 12`` a run's processes could not start their threads: ZeroMQ
    aborted one ("SimulationController-0 was killed by SIGABRT") among tracebacks of "can't
    start new thread". The phase is refused before anything starts."""
    limits = Limits(
        fds_soft=2**20,
        fds_hard=2**20,
        memory_available=None,
        tasks_room=20,
        tasks_limit="ulimit -u (RLIMIT_NPROC) is 30 for uid 1001, which runs 10 tasks",
    )
    need = demand(phase(1, name="train"))
    assert need.threads == capacity.THREADS_PER_PROCESS * need.processes == 28
    with pytest.raises(CapacityError) as caught:
        capacity.check(run(phase(1, name="train")), limits)
    assert caught.value.format_message() == (
        "r.yml: phase 'train' needs 7 processes (1 workers × (2 agents + 1 environments), 2 "
        "Brains, 1 simulation controllers and the store writer) with at least 28 threads (4 "
        "each), but only 20 more may start here: ulimit -u (RLIMIT_NPROC) is 30 for uid 1001, "
        "which runs 10 tasks. Lower phase_config.worker, or raise the limit."
    )
    roomy = Limits(fds_soft=2**20, fds_hard=2**20, memory_available=None, tasks_room=28)
    assert capacity.check(run(phase(1)), roomy) == demand(phase(1)).fds


def test_the_room_for_threads_is_the_users_limit_less_the_tasks_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``RLIMIT_NPROC`` binds every user but root: below :data:`capacity.SCAN_BELOW` the
    user's tasks are counted from /proc (the kernel counts threads) and the room is what is
    left; root's limit is not looked at, nor one that no run comes near."""
    assert capacity.user_tasks(os.getuid()) >= threading.active_count()
    monkeypatch.setattr(capacity, "_cgroup_pids", lambda: None)  # (this machine's cgroup aside)
    monkeypatch.setattr(capacity, "user_tasks", lambda uid: 123)
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY and hard < capacity.SCAN_BELOW:
        pytest.skip(f"this user's hard RLIMIT_NPROC ({hard}) is below the example's limits")
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (500, hard))
        assert capacity.task_room(1001) == (
            377,
            "ulimit -u (RLIMIT_NPROC) is 500 for uid 1001, which runs 123 tasks",
        )
        assert capacity.task_room(0) == (None, "")  # root: not bound
        resource.setrlimit(resource.RLIMIT_NPROC, (capacity.SCAN_BELOW, hard))
        assert capacity.task_room(1001) == (None, "")
    finally:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))
