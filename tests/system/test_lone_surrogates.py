"""Texts with a lone surrogate (``"\\udcff"``: ``os.fsdecode`` of bytes that are no UTF-8) in a
run: kept, with the surrogate as its escape ``\\udcff``, on every store; no process dies of them.

A Muscle whose exception said one died of ``UnicodeEncodeError`` while it reported its failure
(the run's reason said ``ProcessDied``); an environment reporting one in a reward's name failed
of it; a run file in a directory whose name is no UTF-8 failed the run at its start. The plug-ins
are in ``tests/plugins/surrogates.py``; what makes the texts bytes, in
``tests/unit/test_store_texts.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import EXPERIMENTS, Edit, Workspace, finish

pytestmark = pytest.mark.timeout(180)

KEPT = "bad \\udcff"
"""What the plug-ins' text ``"bad \\udcff"`` (:data:`surrogates.TEXT`) is kept as."""
_MUSCLE = "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}"
_ENV = "palaestra.environment.dummy_environment:DummyEnvironment"
_ENV_PARAMS = "params: {discrete: true, max_iter: 10}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request: pytest.FixtureRequest, workspace: Workspace) -> str:
    if request.param == "sqlite":
        return workspace.store_uri
    uri: str = request.getfixturevalue("pg_uri")
    return uri


def config(ws: Workspace, store_uri: str) -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: {store_uri}\ndata_path: {ws.path / 'data'}\n")
    return str(path)


def rows(store_uri: str, sql: str) -> list[tuple[Any, ...]]:
    engine = create_engine(store_uri)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]
    finally:
        engine.dispose()


def run(ws: Workspace, store_uri: str, *edits: Edit) -> tuple[int, str]:
    run_file = ws.variant("dummy_run.yml", *edits)
    result = ws.run("-c", config(ws, store_uri), "experiment-start", str(run_file))
    assert "UnicodeEncodeError" not in result.stderr, result.stderr[-3000:]
    assert "Logging error" not in result.stderr, result.stderr[-3000:]
    return result.returncode, result.stderr


def test_an_exception_with_a_lone_surrogate_fails_the_run_with_its_message(
    workspace: Workspace, store_uri: str
) -> None:
    code, err = run(
        workspace,
        store_uri,
        (_MUSCLE, "muscle: {name: surrogates:SurrogateMuscle, params: {how: raise}}"),
    )

    assert code == 1, err[-3000:]
    headline = "Muscle-defender-0 (surrogates:SurrogateMuscle.propose_actions): ValueError: "
    assert err.count("Error: run ") == 1
    assert f"{headline}{KEPT}\n" in err
    assert "ProcessDied" not in err
    ((status, reason),) = rows(store_uri, "select status, reason from experiment_run_instances")
    assert status == "error"
    assert reason.startswith(f"{headline}{KEPT}\n"), reason


@pytest.mark.parametrize(
    ("how", "sql"),
    [
        ("record", "select value from plugin_records"),
        ("sensor", "select sensors from world_states"),
        ("reward", "select rewards from muscle_actions"),
    ],
)
def test_a_lone_surrogate_in_a_value_or_a_name_is_kept_escaped(
    workspace: Workspace, store_uri: str, how: str, sql: str
) -> None:
    """A ``context.record`` value and a sensor's value failed the run as values that "cannot
    be stored" (``UnencodableValue``); a reward's name failed the environment with a bare
    ``UnicodeEncodeError`` (from the message it sent its agents)."""
    if how == "record":
        new = "muscle: {name: surrogates:SurrogateMuscle, params: {how: record}}"
        edits: tuple[Edit, ...] = ((_MUSCLE, new),)
    else:
        env_params = _ENV_PARAMS.replace("}", f", how: {how}}}")
        edits = ((_ENV, "surrogates:SurrogateEnvironment"), (_ENV_PARAMS, env_params))

    code, err = run(workspace, store_uri, *edits)

    assert code == 0, err[-3000:]
    assert rows(store_uri, "select status from experiment_run_instances") == [("finished",)]
    values = [json.loads(v) if isinstance(v, str) else v for (v,) in rows(store_uri, sql)]
    if how == "record":
        assert {"text": KEPT} in values
    elif how == "sensor":
        assert KEPT in [value["myenv.text"] for value in values]
    else:
        assert any(f"reward {KEPT}" in value for value in values)


def test_a_run_file_in_a_directory_whose_name_is_no_utf8_runs(workspace: Workspace) -> None:
    """Its path (``os.fsdecode``: a lone surrogate for the byte) failed the run at its start
    (``UnicodeEncodeError`` from the message that tells the store writer the run's file)."""
    folder = workspace.path / os.fsdecode(b"runs\xff")
    folder.mkdir()
    (folder / "dummy_run.yml").write_text((EXPERIMENTS / "dummy_run.yml").read_text())
    settings = config(workspace, workspace.store_uri)
    proc = subprocess.Popen(  # (started inside it: an argument so named is another matter)
        [sys.executable, "-m", "palaestra", "-c", settings, "experiment-start", "dummy_run.yml"],
        cwd=folder,
        env=workspace.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    workspace.sessions.add(proc.pid)

    code, _, err = finish(proc, 60)

    assert code == 0, err[-3000:]
    assert rows(workspace.store_uri, "select file from experiment_runs") == [
        (str(folder).encode("utf-8", "backslashreplace").decode() + "/dummy_run.yml",)
    ]
