"""The step engine: both drivers of an episode give the same world, row by row.

Each example run file runs twice, once with ``simulation: {params: {driver: controller}}`` and
once with ``driver: environment``; ``world_states`` and ``muscle_actions`` must agree in every
column but ids and timestamps (Vanilla and TakingTurns, one and two workers).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Edit, Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

WORLD = """
    select p."index", e.uid, w.worker, w.episode, w.step, w.sensors, w.setpoints, w.rewards,
           w.done
    from world_states w join environments e on e.id = w.environment_id
    join experiment_run_phases p on p.id = e.experiment_run_phase_id
    order by 1, 2, 3, 4, 5
"""

ACTIONS = """
    select p."index", a.name, m.worker, m.episode, m.step, m.sensor_readings,
           m.actuator_setpoints, m.rewards, m.reward, m.objective, m.done
    from muscle_actions m join agents a on a.id = m.agent_id
    join experiment_run_phases p on p.id = a.experiment_run_phase_id
    order by 1, 2, 3, 4, 5
"""

_SIMULATION = "      simulation:\n"

RUNS = [
    pytest.param("dummy_run.yml", (), 1, id="Vanilla-1-worker"),
    pytest.param("multiworker_run.yml", (), 2, id="Vanilla-2-workers"),
    pytest.param("taking_turns_run.yml", (), 1, id="TakingTurns-1-worker"),
    pytest.param(
        "taking_turns_run.yml", (("worker: 1", "worker: 2"),), 2, id="TakingTurns-2-workers"
    ),
]


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def run_with(ws: Workspace, source: str, edits: tuple[Edit, ...], driver: str) -> Path:
    """Run ``source`` with ``driver``; returns its store (moved aside)."""
    forced = (_SIMULATION, f"{_SIMULATION}        params: {{driver: {driver}}}\n")
    run_file = ws.variant(source, forced, *edits)
    result = ws.run("-v", "experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    chosen, other = ("the environment", "me") if driver == "environment" else ("me", "the env")
    assert f"SimulationController-0: episodes driven by {chosen}" in result.stderr
    assert f"episodes driven by {other}" not in result.stderr
    return ws.store.rename(ws.path / f"{driver}.db")


@pytest.mark.parametrize(("source", "edits", "workers"), slow_after(RUNS))
def test_both_drivers_give_the_same_rows(
    workspace: Workspace, source: str, edits: tuple[Edit, ...], workers: int
) -> None:
    by_controller = run_with(workspace, source, edits, "controller")
    by_environment = run_with(workspace, source, edits, "environment")
    for sql in (WORLD, ACTIONS):
        expected = rows(by_controller, sql)
        assert {row[2] for row in expected} == set(range(workers))  # every worker's rows
        assert rows(by_environment, sql) == expected


def test_an_unknown_driver_is_refused_before_the_run(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml", (_SIMULATION, f"{_SIMULATION}        params: {{driver: envrionment}}\n")
    )
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "simulation.params.driver" in result.stderr
    assert "expected one of auto, controller, environment, got 'envrionment'" in result.stderr
    assert not workspace.store.exists() or rows(
        workspace.store, "select count(*) from experiment_run_instances"
    ) == [(0,)]


@pytest.mark.slow  # (the environment's rounds under a custom policy: tests/unit/test_rounds.py)
def test_a_policy_of_ones_own_runs_under_both_drivers(workspace: Workspace) -> None:
    custom = ("palaestra.simulation:TakingTurns", "custom_turns:BackwardsTurns")
    by_controller = run_with(workspace, "taking_turns_run.yml", (custom,), "controller")
    by_environment = run_with(workspace, "taking_turns_run.yml", (custom,), "environment")
    for sql in (WORLD, ACTIONS):
        assert rows(by_environment, sql) == rows(by_controller, sql)
    steps = (
        "select name, group_concat(step) from (select a.name, m.step from muscle_actions m "
        "join agents a on a.id = m.agent_id where m.episode = 0 order by a.name, m.step) "
        "group by name order by name"
    )
    assert rows(by_controller, steps) == [("one", "1,3,5,7,9"), ("two", "0,2,4,6,8")]
    # auto: not a built-in policy, so the controller drives
    run_file = workspace.variant("taking_turns_run.yml", custom)
    result = workspace.run("-v", "experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SimulationController-0: episodes driven by me" in result.stderr
