"""MIDAS power grids co-simulated by mosaik through palaestrai-mosaik's MosaikEnvironment (an
asynchronous environment: its mosaik world runs as a task between the steps), offline.

Needs palaestrai-mosaik, midas-palaestrai and MIDAS's store and powergrid modules; skips,
naming what is missing, without them. palaestrAI 3.5.18 runs the same file with the same row
counts (30 ``muscle_actions`` and ``world_states`` for 3 episodes of 10 steps)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.published.conftest import PUBLISHED_VENV

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).resolve().parent / "midas"
MODULES = ("palaestrai_mosaik", "midas_palaestrai", "midas_store", "midas_powergrid")
SENSORS = ["midas.Powergrid-0.0-bus-1.vm_pu", "midas.Powergrid-0.0-bus-2.vm_pu"]
ACTUATORS = ["midas.Powergrid-0.0-sgen-0-2.p_mw", "midas.Powergrid-0.0-sgen-1-3.p_mw"]


def require_midas() -> None:
    missing = [name for name in MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"needs MIDAS through mosaik ({', '.join(missing)} not importable): pip install "
            "palaestrai-mosaik==3.5.9 midas-palaestrai==3.5.10 midas-store midas-powergrid"
        )


@pytest.mark.parametrize(("workers", "episodes"), [(1, 3), (2, 2)])
def test_a_midas_grid_runs_offline(workspace: Workspace, workers: int, episodes: int) -> None:
    require_midas()
    shutil.copy(HERE / "four_bus.yml", workspace.path / "four_bus.yml")
    text = (HERE / "four_bus_run.yml").read_text()
    run_file = workspace.path / "run.yml"
    run_file.write_text(text.replace("WORKERS", str(workers)).replace("EPISODES", str(episodes)))
    result = workspace.run("experiment-start", str(run_file), timeout=280)
    assert result.returncode == 0, result.stderr[-3000:]
    steps = 10 * episodes * workers
    with sqlite3.connect(workspace.store) as conn:
        assert conn.execute("select status from experiment_run_instances").fetchall() == [
            ("finished",)
        ]
        assert conn.execute("select count(*) from world_states").fetchone()[0] == steps
        rows = conn.execute(
            "select worker, sensor_readings, actuator_setpoints from muscle_actions"
        ).fetchall()
    assert len(rows) == steps
    assert sorted({worker for worker, _, _ in rows}) == list(range(workers))
    for _, readings, setpoints in rows:
        assert sorted(json.loads(readings)) == SENSORS
        assert sorted(json.loads(setpoints)) == ACTUATORS
        assert all(isinstance(v, float) for v in json.loads(readings).values())


def test_sac_attacker_and_defender_train_then_test_on_midasmv(workspace: Workspace) -> None:
    """harl's SAC on both sides of MIDAS's medium-voltage grid, midas-palaestrai's objectives,
    TakingTurns; the test phase acts with the actors trained in the first phase."""
    require_midas()
    if importlib.util.find_spec("harl") is None:
        pytest.skip(f"needs palaestrai-agents' harl, in {PUBLISHED_VENV}")
    for name in ("arl_run.yml", "midasmv_constant.yml"):
        shutil.copy(HERE / name, workspace.path / name)
    result = workspace.run("experiment-start", str(workspace.path / "arl_run.yml"), timeout=280)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "starts fresh" not in result.stderr  # the test phase loaded the trained dumps
    with sqlite3.connect(workspace.store) as conn:
        counts = conn.execute(
            "select a.name, p.name, count(*) from muscle_actions m "
            "join agents a on a.id = m.agent_id "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            'group by a.name, p.name order by p."index", a.name'
        ).fetchall()
        worlds = conn.execute("select count(*) from world_states").fetchone()[0]
        dumps = conn.execute("select count(*) from brain_states").fetchone()[0]
    # palaestrAI 3.5.18 stores the same: 5 steps an episode, the defender acting first
    assert counts == [
        ("attacker", "training", 6),
        ("defender", "training", 9),
        ("attacker", "test", 4),
        ("defender", "test", 6),
    ]
    assert worlds == 25
    assert dumps > 0


def test_a_scenario_that_needs_midas_data_sets_fails_at_the_check(workspace: Workspace) -> None:
    """MIDAS's Smart Nord load profiles are a data set to download: the check says so (exit
    2, MIDAS's missing file, what to do), before any process of the run starts."""
    require_midas()
    (workspace.path / "needs_data.yml").write_text(
        (HERE / "four_bus.yml")
        .read_text()
        .replace("modules: [store, powergrid]", "modules: [store, powergrid, sndata]")
        .replace(
            "    four_bus:\n      gridfile: simple_four_bus_system\n",
            "    four_bus:\n      gridfile: simple_four_bus_system\n"
            "  sndata_params:\n    four_bus:\n      active_mapping: {1: [[Land_0, 1.0]]}\n",
        )
    )
    text = (HERE / "four_bus_run.yml").read_text().replace("four_bus.yml", "needs_data.yml")
    run_file = workspace.path / "run.yml"
    run_file.write_text(text.replace("WORKERS", "1").replace("EPISODES", "1"))
    result = workspace.run("experiment-check-syntax", str(run_file), timeout=280)
    assert result.returncode == 2, result.stderr[-3000:]
    error = next(line for line in result.stderr.splitlines() if line.startswith("Error:"))
    assert "environment.params: environment 'midas'" in error
    assert "midas_data" in error and "midasctl download" in error
    assert "skip_download: true" in error
