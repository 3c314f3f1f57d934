"""A run the machine cannot hold, or whose store or data path cannot keep what it makes, is
refused before any process starts."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import EXPERIMENTS, Workspace, finish

pytestmark = pytest.mark.timeout(120)

DUMMY = str(EXPERIMENTS / "dummy_run.yml")


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
    proc = workspace.spawn([sys.executable, "-m", "palaestra", "experiment-start", DUMMY], env)
    code, _, err = finish(proc, 60)
    assert code == 2, err
    assert err.splitlines()[-1] == (
        f"Error: data_path './taken/dumps' ({workspace.path}/taken/dumps), where the Brains "
        "write their dumps: it cannot be made (Not a directory). Set data_path in the runtime "
        "config (or PALAESTRA_DATA_PATH) to a directory you may write in."
    )
    assert not workspace.store.exists()  # nothing started, nothing recorded


@pytest.mark.parametrize(
    ("store_uri", "says"),
    [
        ("sqlite://palaestra.db", "a SQLite store's file follows three slashes"),
        ("sqlite:///:memory:", "is a store in memory, the store writer's alone"),
    ],
)
def test_a_store_that_would_lose_the_results_is_refused_before_anything_starts(
    workspace: Workspace, store_uri: str, says: str
) -> None:
    """``sqlite://palaestra.db`` (one slash short: a host, not a path) was a store in the
    writer's memory: the run finished, exit 0, "Results are in the store sqlite://palaestra.db",
    and they were nowhere."""
    env = workspace.env()
    env["PALAESTRA_STORE_URI"] = store_uri
    proc = workspace.spawn([sys.executable, "-m", "palaestra", "experiment-start", DUMMY], env)
    code, out, err = finish(proc, 60)
    assert code == 2, err
    assert err.startswith(f"Error: store_uri {store_uri!r}")
    assert says in err
    assert "finished" not in out


def test_a_sweep_that_cannot_write_its_dumps_is_refused_before_any_run_starts(
    workspace: Workspace,
) -> None:
    """Each of a sweep's runs executes in a process of its own: a ``data_path`` that cannot be
    written ended each of those processes with a traceback, reported as "the executor process
    ... died (exit code 1)". The sweep is refused before its first run."""
    env = workspace.env()
    env["PALAESTRA_DATA_PATH"] = "/proc/palaestra-cannot-be-made"
    proc = workspace.spawn(
        [sys.executable, "-m", "palaestra", "experiment-start", "--seeds", "1..2", DUMMY], env
    )
    code, out, err = finish(proc, 60)
    assert code == 2, err
    assert "Traceback" not in err + out
    assert err.startswith("Error: data_path '/proc/palaestra-cannot-be-made'"), err
    assert "dummy-run-seed1" not in out  # (no run began)


RUN_HERE = """\
import sys
from palaestra.experiment.isolated import run_here
from palaestra.experiment.runfile import load_run_file
from palaestra.experiment.runtime_config import RuntimeConfig

outcome = run_here(load_run_file(sys.argv[1]), RuntimeConfig(data_path=sys.argv[2]))
print(outcome.exit_code, outcome.message)
"""


def test_a_run_refused_in_its_own_process_is_its_outcome(workspace: Workspace) -> None:
    """In a run's own process (a sweep's, a Ray node's), a refusal raised before the run
    starts is the run's outcome (exit 2 and why), not a traceback and "died (exit code 1)"."""
    proc = workspace.spawn(
        [sys.executable, "-c", RUN_HERE, DUMMY, "/proc/palaestra-cannot-be-made"],
    )
    code, out, err = finish(proc, 60)
    assert code == 0, err
    assert "Traceback" not in err
    assert out.startswith("2 data_path '/proc/palaestra-cannot-be-made'"), out
