"""What a run ran with (palaestra/experiment/provenance.py): the versions as importlib.metadata
finds them, and the code revision as git tells it."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import pytest

from palaestra.experiment.provenance import PACKAGES, CodeRevision, package_versions

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


def test_the_versions_are_those_importlib_metadata_finds() -> None:
    extra = ("pytest", "not-a-distribution-at-all")
    found = package_versions(extra)
    assert found == {name: importlib.metadata.version(name) for name in (*PACKAGES, "pytest")}


def test_the_code_revision_is_the_commit_git_names(tmp_path: Path) -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    revision = CodeRevision(str(ROOT / "experiments" / "dummy_run.yml")).result()
    if head.returncode:  # (not a checkout)
        assert revision is None
    else:
        assert revision is not None and revision.split("+")[0] == head.stdout.strip()
    assert CodeRevision(str(tmp_path / "run.yml")).result() is None  # not a repository
