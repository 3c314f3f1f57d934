"""A run the machine cannot hold is refused before any process starts."""

from __future__ import annotations

import pytest

from tests.conftest import Workspace

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
