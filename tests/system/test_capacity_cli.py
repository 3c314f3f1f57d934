"""A run the machine cannot hold is refused before any process starts."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import EXPERIMENTS, Workspace, finish

pytestmark = pytest.mark.timeout(120)


def test_a_huge_worker_count_is_refused_before_anything_starts(workspace: Workspace) -> None:
    run_file = workspace.variant("dummy_run.yml", ("worker: 1", "worker: 1000000"))
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 2, result.stderr
    message = result.stderr
    assert "variant.yml: phase 'phase_0' needs 4,000,003 processes" in message
    assert "1000000 workers × (2 agents + 1 environments)" in message
    assert "phase_config.worker" in message
    assert "Traceback" not in message
    assert not workspace.store.exists()  # nothing started, nothing recorded


def test_a_data_path_that_cannot_be_written_is_refused_before_anything_starts(
    workspace: Workspace,
) -> None:
    """Every Brain writes its dumps below ``data_path``: one that cannot be made or written
    failed the run at the first episode's end (which may be hours in), naming the Brain's
    ``store`` for palaestra's own PermissionError. The run is refused before anything starts,
    naming the setting."""
    (workspace.path / "taken").write_text("a file where the directory would go\n")
    (workspace.path / "palaestra-runtime.yaml").write_text("data_path: ./taken/dumps\n")
    env = workspace.env()
    env.pop("PALAESTRA_DATA_PATH", None)
    proc = workspace.spawn(
        [
            sys.executable,
            "-m",
            "palaestra",
            "experiment-start",
            str(EXPERIMENTS / "dummy_run.yml"),
        ],
        env,
    )
    code, _, err = finish(proc, 60)
    assert code == 2, err
    assert err.splitlines()[-1] == (
        f"Error: data_path './taken/dumps' ({workspace.path}/taken/dumps), where the Brains "
        "write their dumps: it cannot be made (Not a directory). Set data_path in the runtime "
        "config (or PALAESTRA_DATA_PATH) to a directory you may write in."
    )
    assert not workspace.store.exists()  # nothing started, nothing recorded
