"""A store on a full disk ends the run with exit code 3 (the store is unusable), naming the
store, not with exit code 1 as if the run had failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.conftest import small_disk as mounted
from tests.system.test_rows import run_file

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory on a real 1 MiB filesystem (tmpfs); skipped where it cannot be mounted."""
    with mounted(tmp_path / "small-disk", "1m") as mount:
        yield mount


@pytest.mark.slow
def test_a_full_disk_exits_3_naming_the_store(workspace: Workspace, small_disk: Path) -> None:
    store = small_disk / "palaestra.db"
    (workspace.path / "palaestra-runtime.yaml").write_text(f"store_uri: sqlite:///{store}\n")
    path = run_file(workspace)  # 100,000 steps: far more rows than 1 MiB holds

    result = workspace.run("experiment-start", str(path))

    assert result.returncode == 3, result.stderr[-3000:]
    assert str(store) in result.stderr
    assert "disk is full" in result.stderr
    assert "StoreWriter" in result.stderr
    assert result.seconds < 60
