"""``experiment-start --keep-going`` on several run files (a generated design): an invalid file
and a failing run do not stop the others, and the end says which failed and why."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(120)


def test_a_failing_design_does_not_stop_the_others(workspace: Workspace) -> None:
    text = (EXPERIMENTS / "dummy_run.yml").read_text()
    files = []
    for name, old, new in [
        ("good-a", "uid: dummy-run", "uid: good-a"),
        ("invalid", "DummyBrain, params", "DummyBrian, params"),
        ("crashing", "palaestra.agent.dummy_muscle:DummyMuscle", "probes:CrashingMuscle"),
        ("good-b", "uid: dummy-run", "uid: good-b"),
    ]:
        path = workspace.path / f"{name}.yml"
        edited = text.replace(old, new, 1)
        if name in ("invalid", "crashing"):
            edited = edited.replace("uid: dummy-run", f"uid: {name}", 1)
        path.write_text(edited)
        files.append(str(path))
    result = workspace.run("experiment-start", "--keep-going", *files, timeout=100)
    assert result.returncode == 2, result.stderr  # the worst: an invalid file
    with sqlite3.connect(workspace.store) as conn:
        statuses = dict(
            conn.execute(
                "select r.uid, i.status from experiment_run_instances i "
                "join experiment_runs r on r.id = i.experiment_run_id"
            ).fetchall()
        )
    assert statuses == {"good-a": "finished", "crashing": "error", "good-b": "finished"}
    assert "2 of 4 run files finished." in result.stdout
    tail = result.stderr[result.stderr.index("2 failed:") :]
    assert f"{files[1]}" in tail and "DummyBrian" in tail
    assert f"run 'crashing' ({files[2]})" in tail and "muscle cannot act" in tail


def test_without_keep_going_an_invalid_file_stops_all(workspace: Workspace) -> None:
    good = workspace.path / "good.yml"
    good.write_text((EXPERIMENTS / "dummy_run.yml").read_text())
    bad = workspace.path / "bad.yml"
    bad.write_text(good.read_text().replace("DummyBrain, params", "DummyBrian, params", 1))
    result = workspace.run("experiment-start", str(good), str(bad))
    assert result.returncode == 2
    assert runs_stored(workspace) == 0  # all are checked before the first starts


def runs_stored(workspace: Workspace) -> int:
    if not workspace.store.exists():
        return 0
    with sqlite3.connect(workspace.store) as conn:
        tables = conn.execute("select name from sqlite_master where name = 'experiment_runs'")
        if not tables.fetchall():
            return 0
        return int(conn.execute("select count(*) from experiment_runs").fetchone()[0])
