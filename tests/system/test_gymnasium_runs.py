"""GymnasiumEnvironment in whole runs: rows recorded, repeatable from the run's seed,
terminated and truncated apart, frames written, bad input and bad values reported."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Workspace, env_hiding

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: gym-run
experiment_uid: gym-tests
seed: {seed}
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: palaestra.environment.gymnasium:GymnasiumEnvironment
            uid: cart
            params: {params}
      agents:
        - name: random
          brain: {{name: palaestra.agent:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent:DummyObjective, params: {{}}}}
          sensors: [{sensors}]
          actuators: [{actuators}]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: {episodes}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""

CARTPOLE = "{env_id: CartPole-v1, env_kwargs: {max_episode_steps: 30}}"


def run_file(
    ws: Workspace,
    params: str = CARTPOLE,
    seed: int = 5,
    episodes: int = 3,
    sensors: str = "cart.obs",
    actuators: str = "cart.action",
    name: str = "run.yml",
) -> Path:
    path = ws.path / name
    path.write_text(
        RUN.format(
            params=params, seed=seed, episodes=episodes, sensors=sensors, actuators=actuators
        )
    )
    return path


def world_states(store: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(store) as conn:
        return conn.execute(
            "select episode, step, sensors, setpoints, rewards, done "
            "from world_states order by episode, step"
        ).fetchall()


@pytest.mark.slow
def test_a_cartpole_run_records_its_steps_and_repeats_from_its_seed(
    workspace: Workspace,
) -> None:
    first = workspace.run("experiment-start", str(run_file(workspace)))
    assert first.returncode == 0, first.stderr[-3000:]
    rows = world_states(workspace.store)
    assert len({r[0] for r in rows}) == 3
    readings = json.loads(str(rows[0][2]))
    assert list(readings) == ["cart.obs"] and len(readings["cart.obs"]) == 4
    assert json.loads(str(rows[0][4])) == {"reward": 1.0}
    assert sum(int(r[5]) for r in rows) == 3  # one last step per episode

    workspace.store.unlink()
    again = workspace.run("experiment-start", str(run_file(workspace)))
    assert again.returncode == 0, again.stderr[-3000:]
    assert world_states(workspace.store) == rows

    workspace.store.unlink()
    other = workspace.run("experiment-start", str(run_file(workspace, seed=6)))
    assert other.returncode == 0, other.stderr[-3000:]
    assert world_states(workspace.store) != rows


def test_frames_are_written_under_the_data_path(workspace: Workspace) -> None:
    params = "{env_id: CartPole-v1, env_kwargs: {max_episode_steps: 4}, record_frames: {every: 2}}"
    result = workspace.run("experiment-start", str(run_file(workspace, params=params)))
    assert result.returncode == 0, result.stderr[-3000:]
    (folder,) = (workspace.path / "_outputs" / "frames" / "cart").iterdir()
    assert folder.name.startswith("worker-0-seed-")
    assert sorted(p.name for p in folder.iterdir()) == ["episode-00000.npz", "episode-00002.npz"]


def test_frames_follow_the_data_path_of_a_runtime_config_given_with_c(
    workspace: Workspace,
) -> None:
    params = "{env_id: CartPole-v1, env_kwargs: {max_episode_steps: 3}, record_frames: {every: 1}}"
    config = workspace.path / "rt.yaml"
    config.write_text(f"store_uri: {workspace.store_uri}\ndata_path: elsewhere\n")
    result = workspace.run(
        "-c", str(config), "experiment-start", str(run_file(workspace, params=params))
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (workspace.path / "_outputs" / "frames").exists()
    (folder,) = (workspace.path / "elsewhere" / "frames" / "cart").iterdir()
    assert len(list(folder.iterdir())) >= 1


def test_an_unknown_id_exits_2_naming_the_file_the_key_and_the_nearest_ids(
    workspace: Workspace,
) -> None:
    path = run_file(workspace, params="{env_id: CartPol-v1}")
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{path}:11: schedule[0].train.environments[0].environment.params: " in result.stderr
    assert "params.env_id: no gymnasium id 'CartPol-v1'" in result.stderr
    assert "nearest registered ids: CartPole-v1" in result.stderr
    assert "Traceback" not in result.stderr
    assert not workspace.store.exists()  # found while checking the run file


def test_a_sensor_the_environment_lacks_is_named_with_the_ones_it_has(
    workspace: Workspace,
) -> None:
    result = workspace.run("experiment-start", str(run_file(workspace, sensors="cart.ob")))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "environment 'cart' has no sensor 'cart.ob'" in result.stderr
    assert "Did you mean 'cart.obs'?" in result.stderr


def test_without_gymnasium_the_run_exits_2_with_the_pip_line(workspace: Workspace) -> None:
    path = run_file(workspace)
    result = subprocess.run(
        [sys.executable, "-m", "palaestra", "experiment-start", str(path)],
        cwd=workspace.path,
        env=env_hiding(workspace, "gymnasium"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "the environment GymnasiumEnvironment needs gymnasium, which is not installed" in (
        result.stderr
    )
    assert "pip install 'palaestra[gym]'" in result.stderr
    assert not workspace.store.exists()


def test_nan_from_the_environment_fails_the_run_naming_the_step(workspace: Workspace) -> None:
    params = (
        "{factory: 'gym_plugins:make_misbehaving', env_kwargs: {how: nan, at: 4}, "
        "check: every_step}"
    )
    result = workspace.run("experiment-start", str(run_file(workspace, params=params)))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "step 4 of episode 0 returned observation array([0.5, nan]" in result.stderr
    assert "which holds NaN" in result.stderr


def test_an_environment_that_raises_fails_the_run_naming_the_step(workspace: Workspace) -> None:
    params = "{factory: 'gym_plugins:make_misbehaving', env_kwargs: {how: raise, at: 2}}"
    result = workspace.run("experiment-start", str(run_file(workspace, params=params)))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "step 2 of episode 0 raised ZeroDivisionError: the simulation diverged" in (
        result.stderr
    )


def test_an_unmappable_space_exits_2_naming_it(workspace: Workspace) -> None:
    params = "{factory: 'gym_plugins:make_text'}"
    result = workspace.run(
        "experiment-start", str(run_file(workspace, params=params, sensors="cart.obs.x"))
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "'obs.note' is a Text space" in result.stderr
    assert not workspace.store.exists()
