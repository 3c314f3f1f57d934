"""What a run ran with (palaestra/experiment/provenance.py): the versions as importlib.metadata
finds them, and the code revision as git tells it."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import pytest

from palaestra.experiment.provenance import (
    PACKAGES,
    REVISION_MAX,
    CodeRevision,
    package_versions,
)

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


def test_a_sha256_repository_s_modified_revision_fits_the_store_s_column(tmp_path: Path) -> None:
    """A run file in a git repository of SHA-256 commits with a modification: its revision
    (64 hex digits and ``+dirty``, 70 characters) failed the run at its start on PostgreSQL
    (``StoreWriter: StringDataRightTruncation: value too long for type character
    varying(64)``) while SQLite kept it."""
    from palaestra.store.tables import experiment_run_instances

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            pytest.skip(f"git cannot: {done.stderr.strip()}")
        return done.stdout.strip()

    git("init", "-q", "--object-format=sha256")
    run_file = tmp_path / "run.yml"
    run_file.write_text("uid: r\n")
    git("add", "run.yml")
    git("commit", "-q", "-m", "run")
    head = git("rev-parse", "HEAD")
    assert len(head) == 64
    assert CodeRevision(str(run_file)).result() == head
    run_file.write_text("uid: changed\n")

    revision = CodeRevision(str(run_file)).result()

    assert revision == f"{head[:58]}+dirty"
    assert experiment_run_instances.c.code_revision.type.length == REVISION_MAX == len(revision)
    assert git("rev-parse", head[:58]) == head
