"""The run files palaestrai-environments ships (tests/fixtures/*.yml of its sdist), unchanged.

They are not part of this repository: the test fetches the source distribution of the
installed version from the package index once per session and skips, saying why, if it
cannot. Three of the four run on palaestra as they are (the gym one does not on palaestrAI
3.5.18); the tic-tac-toe one runs on neither (checked with palaestrAI):

- ``gym_experiment_run.yml`` declares ``reward_space: Box(shape=())`` while the gym wrapper
  returns its reward as ``np.array([reward])``, shape (1,); palaestrAI fails the run with
  ``Value "[1.]" not contained in space``. palaestra reshapes a value with as many elements
  as its space into the space's shape, with one warning naming the environment, the reward
  and both shapes, so this file runs unchanged.
- ``tic_tac_toe_experiment_run.yml`` names ``tictactoe.tic_tac_toe_environment``, a module the
  installed distribution does not have (it is ``palaestrai_environments.tictactoe...``):
  palaestra exits 2 naming the file, line and module (palaestrAI fails earlier, on the
  simulation name ``VanillaSimController`` that palaestra accepts). With a ``tictactoe``
  package on the path (the distribution's own, linked) it runs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.published.conftest import require_published, sdist_fixtures

pytestmark = pytest.mark.timeout(180)

FIXTURES = {
    "continuous": "continuous_experiment_run.yml",
    "discrete": "discrete_experiment_run.yml",
    "gym": "gym_experiment_run.yml",
    "tic_tac_toe": "tic_tac_toe_experiment_run.yml",
}


@pytest.fixture(scope="session")
def environments_run_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory with palaestrai-environments' shipped run files, from its sdist."""
    require_published()
    where = tmp_path_factory.mktemp("palaestrai-environments")
    sdist_fixtures("palaestrai-environments", list(FIXTURES.values()), where)
    return where


def version(distribution: str) -> tuple[int, ...]:
    """The installed version of ``distribution``, as numbers (3.5.6.1: (3, 5, 6, 1))."""
    return tuple(int(part) for part in importlib.metadata.version(distribution).split(".")[:4])


def finished(workspace: Workspace) -> None:
    with sqlite3.connect(workspace.store) as conn:
        assert conn.execute("select status from experiment_run_instances").fetchall() == [
            ("finished",)
        ]
        (actions,) = conn.execute("select count(*) from muscle_actions").fetchone()
        (states,) = conn.execute("select count(*) from world_states").fetchone()
    assert actions > 0 and states > 0


@pytest.mark.parametrize("name", ["continuous", "discrete"])
def test_a_shipped_run_file_runs_unchanged(
    workspace: Workspace, environments_run_files: Path, name: str
) -> None:
    result = workspace.run("experiment-start", str(environments_run_files / FIXTURES[name]))

    assert result.returncode == 0, result.stderr[-3000:]
    finished(workspace)


def test_the_gym_run_file_runs_unchanged_its_rewards_reshaped_with_one_warning(
    workspace: Workspace, environments_run_files: Path
) -> None:
    """The wrapper's rewards have shape (1,) for a space of shape (): as many elements as the
    space, so palaestra reshapes them, warning once (palaestrAI 3.5.18 fails the run)."""
    run_file = environments_run_files / FIXTURES["gym"]
    declared = 'reward_space: "Box(low=-1000, high=1000, shape=(), dtype=np.float32)"'
    assert declared in run_file.read_text()

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR " not in result.stderr and "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if "reshaped to" in line]
    if version("palaestrai-environments") < (3, 5, 6):
        assert len(warnings) == 1, result.stderr[-3000:]
        (warning,) = warnings
        assert "WARNING" in warning
        assert "Environment-myenv-0: GymEnvironment.update returned reward 'gym.reward'" in warning
        assert "with shape (1,), but its space Box(" in warning and "has shape ()" in warning
    else:  # 3.5.6's wrapper returns its rewards in the declared shape: nothing to reshape
        assert warnings == [], warnings
    finished(workspace)
    with sqlite3.connect(workspace.store) as conn:
        rewards = [json.loads(r)["gym.reward"] for (r,) in conn.execute(
            "select rewards from world_states"
        )]  # fmt: skip
    assert rewards and all(isinstance(r, float) for r in rewards), rewards[:3]


def test_the_tic_tac_toe_run_file_names_a_module_the_distribution_lacks(
    workspace: Workspace,
    environments_run_files: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_file = environments_run_files / FIXTURES["tic_tac_toe"]

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{run_file}:16:" in result.stderr
    assert "no module 'tictactoe.tic_tac_toe_environment'" in result.stderr

    # with the distribution's tictactoe package importable under the name the file uses
    spec = importlib.util.find_spec("palaestrai_environments")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations))) / "tictactoe"
    path = workspace.path / "path"
    path.mkdir()
    (path / "tictactoe").symlink_to(package, target_is_directory=True)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))
    )
    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 0, result.stderr[-3000:]
    finished(workspace)
