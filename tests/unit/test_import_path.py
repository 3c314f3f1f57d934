"""Where plug-in modules are found, :mod:`palaestra.core.description.import_path`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from palaestra.core.description.import_path import add_plugin_dirs


def test_a_run_file_through_a_symlink_finds_the_plugins_beside_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """experiment-start links/run.yml (a link to experiments/run.yml) did not find
    experiments/my_agents.py: only the link's directory went on the import path."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "links").mkdir()
    (tmp_path / "experiments" / "run.yml").write_text("uid: x\n")
    (tmp_path / "links" / "run.yml").symlink_to(tmp_path / "experiments" / "run.yml")

    dirs = add_plugin_dirs(["links/run.yml"])

    assert dirs == [str(tmp_path / "links"), str(tmp_path / "experiments"), str(tmp_path)]
    assert all(d in sys.path for d in dirs)


def test_a_plain_run_file_brings_its_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.yml").write_text("uid: x\n")
    assert add_plugin_dirs(["run.yml"]) == [str(tmp_path)]
