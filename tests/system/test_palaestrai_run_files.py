"""palaestrAI's own dummy run files run unchanged (their ``palaestrai.`` class names too).

The files are not part of this repository: the test fetches palaestrAI's source distribution
from the package index once (it is kept between sessions) and skips, saying why, if it
cannot.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace, sdist_fixtures, slow_after

pytestmark = pytest.mark.timeout(180)

VERSION = "3.5.18"
FILES = [
    "dummy_run.yml",
    "dummy_run_taking_turns.yml",
    "dummy_run_multiworker.yml",
    "dummy_run_tt_multiworker.yml",
    "dummy_run-phases_modes.yml",
    "dummy_run_multi-train-phase_eval.yml",
    "dummy_run_multiworker_eval.yml",
]


@pytest.fixture(scope="session")
def palaestrai_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sdist_fixtures("palaestrai", VERSION, FILES, tmp_path_factory.mktemp("palaestrai"))


@pytest.mark.parametrize("name", slow_after(FILES, 2))
def test_palaestrai_run_file_runs(
    workspace: Workspace, palaestrai_fixtures: Path, name: str
) -> None:
    text = (palaestrai_fixtures / name).read_text()
    assert "palaestrai." in text
    run_file = workspace.path / name
    run_file.write_text(text)
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        assert conn.execute("select status from experiment_run_instances").fetchall() == [
            ("finished",)
        ]
        (actions,) = conn.execute("select count(*) from muscle_actions").fetchone()
        (states,) = conn.execute("select count(*) from world_states").fetchone()
    assert actions > 0 and states > 0
