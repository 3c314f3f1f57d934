"""arsenAI's experiment designs on palaestra: ``arsenai generate`` on the example that
palaestrai-arsenai ships (tests/fixtures/example_experiment.yml of its sdist, fetched from the
package index once), then every generated run file at once with ``experiment-start
--keep-going``.

The example's design writes 16 run files; half of them give their environment palaestrAI's
``palaestrai.environment.dummy_reward:DummyReward``, a module palaestrAI 3.5.18 does not have
either: those are refused naming the file, line and module, and the other 8 run to the end."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import Workspace, finish
from tests.published.conftest import sdist_fixtures

pytestmark = pytest.mark.timeout(300)


def example_design(where: Path) -> Path:
    """arsenAI's example design, from the sdist of the installed palaestrai-arsenai."""
    if importlib.util.find_spec("arsenai") is None:
        pytest.skip("needs palaestrai-arsenai (pip install palaestrai-arsenai==3.5.5)")
    where.mkdir(parents=True, exist_ok=True)
    return sdist_fixtures("palaestrai-arsenai", ["example_experiment.yml"], where) / (
        "example_experiment.yml"
    )


def test_generated_designs_run_at_once_and_the_end_names_what_failed(
    workspace: Workspace,
) -> None:
    design = example_design(workspace.path / "sdist")
    arsenai = Path(sys.executable).with_name("arsenai")
    generated = workspace.spawn([str(arsenai), "generate", str(design)])
    code, _, err = finish(generated, 120, "arsenai generate")
    assert code == 0, err[-2000:]
    run_files = sorted(str(p) for p in (workspace.path / "_outputs").glob("*.yml"))
    assert len(run_files) == 16, run_files

    result = workspace.run("experiment-start", "--keep-going", "-q", *run_files, timeout=280)
    assert result.returncode == 2, result.stderr[-3000:]  # some are invalid, none else failed
    assert "8 of 16 run files finished." in result.stdout
    failures = result.stderr[result.stderr.index("8 failed:") :].splitlines()[1:]
    assert len(failures) == 8
    assert all("cannot import module 'palaestrai.environment.dummy_reward'" in f for f in failures)
    with sqlite3.connect(workspace.store) as conn:
        statuses = conn.execute("select status from experiment_run_instances").fetchall()
        actions = conn.execute("select count(*) from muscle_actions").fetchone()[0]
    assert statuses == [("finished",)] * 8
    assert actions > 0
    assert os.path.exists(workspace.store)
