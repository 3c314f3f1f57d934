"""``cpu_affinity: worker``: each rollout worker's processes run on one CPU (worker ``w`` on the
``w``-th the executor may use), the Brains too with a single worker; ``none`` (the default)
leaves them where the operating system puts them. ``spin_us`` reaches every process of the run.
``writer_priority``: the store writer as it was started (``normal``, the default) or in Linux's
SCHED_IDLE class (``background``). The plug-ins record the CPUs their own process may use and
how long its links spin, the environment also the writer's policy
(tests/plugins/affinity_plugins.py)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.conftest import Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: affinity-run
experiment_uid: affinity-tests
seed: 5
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: affinity_plugins:CpuEnvironment
            uid: myenv
            params: {{discrete: true, max_iter: 3}}
      agents:
        - name: pinned
          brain: {{name: affinity_plugins:CpuBrain, params: {{}}}}
          muscle: {{name: affinity_plugins:CpuMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [myenv.0]
          actuators: [myenv.0]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""

CPUS = sorted(os.sched_getaffinity(0))


def recorded(
    workspace: Workspace, runtime: str, key: str, workers: int
) -> list[tuple[str, int, str]]:
    """Run with the runtime config ``runtime`` and ``workers`` workers; what the plug-ins
    recorded under ``key``: (source, worker, value) rows."""
    (workspace.path / "run.yml").write_text(RUN.format(workers=workers))
    (workspace.path / "palaestra-runtime.yaml").write_text(runtime)
    result = workspace.run("experiment-start", "-q", "run.yml")
    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(workspace.store) as conn:
        return conn.execute(
            "select source, worker, value from plugin_records where key = ?", (key,)
        ).fetchall()


def recorded_cpus(
    workspace: Workspace, affinity: str, workers: int
) -> dict[tuple[str, int], list[int]]:
    """Run with ``cpu_affinity: affinity`` and ``workers`` workers; the CPUs each plug-in's
    process could use, by (source, worker)."""
    found: dict[tuple[str, int], list[int]] = {}
    for source, worker, value in recorded(
        workspace, f"cpu_affinity: {affinity}\n", "cpus", workers
    ):
        found.setdefault((source, worker), json.loads(value))
    return found


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell pinned from unpinned")
def test_each_workers_processes_run_on_the_workers_cpu(workspace: Workspace) -> None:
    found = recorded_cpus(workspace, "worker", workers=2)
    for worker in range(2):
        cpu = [CPUS[worker % len(CPUS)]]
        assert found[("env:myenv", worker)] == cpu
        assert found[("muscle:pinned", worker)] == cpu
    brain = [cpus for (source, _), cpus in found.items() if source == "brain:pinned"]
    assert brain == [CPUS]  # it serves both workers: where the system puts it


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell pinned from unpinned")
def test_with_one_worker_the_brain_shares_its_cpu(workspace: Workspace) -> None:
    found = recorded_cpus(workspace, "worker", workers=1)
    assert set(map(tuple, found.values())) == {(CPUS[0],)}
    assert {source for source, _ in found} == {"env:myenv", "muscle:pinned", "brain:pinned"}


def test_by_default_no_process_is_pinned(workspace: Workspace) -> None:
    found = recorded_cpus(workspace, "none", workers=1)
    assert len(found) == 3 and all(cpus == CPUS for cpus in found.values())


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell pinned from unpinned")
def test_the_runs_of_a_parallel_sweep_take_cpus_of_their_own(workspace: Workspace) -> None:
    """Two runs at once: each one's processes on its own share of the CPUs (every other)."""
    (workspace.path / "run.yml").write_text(RUN.format(workers=1))
    (workspace.path / "palaestra-runtime.yaml").write_text("cpu_affinity: worker\n")
    result = workspace.run(
        "experiment-start", "-q", "run.yml", "--seeds", "1,2", "--parallel", "2"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(workspace.store) as conn:
        rows = conn.execute(
            "select r.uid, p.value from plugin_records p"
            " join experiment_run_phases ph on ph.id = p.experiment_run_phase_id"
            " join experiment_run_instances i on i.id = ph.experiment_run_instance_id"
            " join experiment_runs r on r.id = i.experiment_run_id"
            " where p.key = 'cpus' order by r.uid"
        ).fetchall()
    by_run: dict[str, set[tuple[int, ...]]] = {}
    for uid, value in rows:
        by_run.setdefault(uid, set()).add(tuple(json.loads(value)))
    assert len(by_run) == 2 and all(len(found) == 1 for found in by_run.values()), by_run
    assert sorted(cpus for found in by_run.values() for cpus in found) == [
        (CPUS[0], *CPUS[2::2]),
        (CPUS[1], *CPUS[3::2]),
    ]


@pytest.mark.parametrize("start_method", slow_after(["fork", "forkserver", "spawn"], 2))
def test_every_process_spins_as_the_runtime_config_says(
    workspace: Workspace, start_method: str
) -> None:
    runtime = f"spin_us: 35\nstart_method: {start_method}\n"
    rows = recorded(workspace, runtime, "spin_us", workers=1)
    # (the JSON value 35.0 comes back as SQLite keeps it: the number 35)
    found = sorted({(source, float(value)) for source, _, value in rows})
    assert found == [("brain:pinned", 35.0), ("env:myenv", 35.0), ("muscle:pinned", 35.0)]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's SCHED_IDLE")
@pytest.mark.parametrize(
    ("runtime", "policy"), [("", "other"), ("writer_priority: background\n", "idle")]
)
def test_the_store_writer_runs_in_the_background_where_told_so(
    workspace: Workspace, runtime: str, policy: str
) -> None:
    rows = recorded(workspace, runtime, "writer", workers=1)
    assert [value for _, _, value in rows] == [json.dumps(policy)]
