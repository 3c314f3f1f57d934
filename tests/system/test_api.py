"""``palaestra.run`` and ``palaestra.sweep`` run whole experiments: from a plain script, inside a
running event loop (as in Jupyter), from a dict, with overrides; a failed run is a result."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

import palaestra
from palaestra.core import procfs
from palaestra.core.errors import EXIT_INVALID_INPUT, RunFileError
from tests.conftest import EXPERIMENTS, PLUGINS, ROOT

pytestmark = pytest.mark.timeout(120)

DUMMY = EXPERIMENTS / "dummy_run.yml"
MAX_ITER = "schedule.0.phase_0.environments.0.environment.params.max_iter"


def _document() -> dict[str, Any]:
    """The dummy run's document, its first phase only (half the time of both)."""
    document: dict[str, Any] = YAML(typ="safe").load(DUMMY.read_text())
    document["schedule"] = document["schedule"][:1]
    return document


def _run_file(tmp_path: Path) -> Path:
    path = tmp_path / "one_phase.yml"
    YAML(typ="safe").dump(_document(), path)
    return path


def _agent_steps(document: dict[str, Any], max_iter: int | None = None) -> int:
    """Agent steps the dummy run file makes: per phase, agents x workers x episodes x steps."""
    phase_0 = document["schedule"][0]["phase_0"]
    steps = max_iter or phase_0["environments"][0]["environment"]["params"]["max_iter"]
    per_phase = len(phase_0["agents"]) * phase_0["phase_config"]["worker"] * steps
    return per_phase * len(document["schedule"])


def _script(tmp_path: Path, body: str) -> dict[str, Any]:
    """Run ``body`` as a script in ``tmp_path``; it prints one JSON object as its last line."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
def test_run_from_a_script_and_inside_a_running_event_loop(tmp_path: Path) -> None:
    """The executor needs a main thread and no running loop: it gets a process of its own,
    forked where the caller has one thread, spawned where it has more (a Jupyter kernel); the
    script has no ``__name__`` guard, which a spawn must not trip over."""
    run_file = _run_file(tmp_path)
    found = _script(
        tmp_path,
        f"""
        import asyncio, json, sys, threading
        import palaestra

        light = "palaestra.experiment" not in sys.modules  # import palaestra stays light
        plain = palaestra.run({str(run_file)!r})  # the default store: ./palaestra.db

        async def in_a_notebook_cell():
            return palaestra.run({str(run_file)!r})

        in_a_loop = asyncio.run(in_a_notebook_cell())
        threading.Thread(target=threading.Event().wait, daemon=True).start()  # as a kernel's
        beside_a_thread = asyncio.run(in_a_notebook_cell())
        print(json.dumps(dict(light=light, store=plain.store_uri, results=[
            [r.run_uid, r.instance_uid, r.status, r.exit_code, r.reason,
             len(r.muscle_actions()), len(r.world_states())]
            for r in (plain, in_a_loop, beside_a_thread)
        ])))
        """,
    )
    assert found["light"] is True
    assert found["store"] == f"sqlite:///{tmp_path / 'palaestra.db'}"
    steps = _agent_steps(_document())
    results = found["results"]
    assert [r[:1] + r[2:] for r in results] == [
        ["dummy-run", "finished", 0, "", steps, steps // 2]
    ] * 3
    with sqlite3.connect(tmp_path / "palaestra.db") as conn:
        instances = conn.execute(
            "select uid, status from experiment_run_instances order by id"
        ).fetchall()
    assert instances == [(r[1], "finished") for r in results]


def test_a_dict_run_with_overrides_gets_a_derived_uid_and_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "runs.db"
    document = _document()
    result = palaestra.run(
        document, store_uri=f"sqlite:///{store}", overrides={"seed": 5, MAX_ITER: 4}
    )
    assert (result.status, result.exit_code) == ("finished", 0), result.reason
    assert result.run_uid == "dummy-run-seed5-max_iter4"
    assert result.overrides == {"seed": 5, MAX_ITER: 4}
    frame = result.muscle_actions()
    assert len(frame) == _agent_steps(document, max_iter=4)
    monkeypatch.setitem(sys.modules, "pandas", None)  # without pandas: plain rows
    rows = result.muscle_actions(agent="attacker")
    assert isinstance(rows, list) and isinstance(rows[0], dict)
    assert len(rows) == (frame["agent"] == "attacker").sum()
    with sqlite3.connect(store) as conn:
        rows = conn.execute("select uid, seed, overrides from experiment_runs").fetchall()
    assert [(uid, seed, json.loads(overrides)) for uid, seed, overrides in rows] == [
        ("dummy-run-seed5-max_iter4", 5, {"seed": 5, MAX_ITER: 4})
    ]


def test_a_failing_run_returns_error_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    document = _document()
    document["schedule"][0]["phase_0"]["agents"][0]["brain"] = {
        "name": "probes:CrashingBrain",
        "params": {"after": 2},
    }
    result = palaestra.run(document, store_uri=f"sqlite:///{tmp_path / 'runs.db'}")
    assert (result.status, result.exit_code) == ("error", 1)
    assert "probes:CrashingBrain.thinking" in result.reason
    assert "brain broke after 2 calls" in result.reason
    assert result.phases()["status"].tolist() == ["error"]


def test_a_run_that_cannot_start_raises_before_anything_runs(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    with pytest.raises(RunFileError) as caught:
        palaestra.run({"uid": "x", "seed": 1}, store_uri=f"sqlite:///{store}")
    assert caught.value.exit_code == EXIT_INVALID_INPUT
    assert "missing required key" in str(caught.value)
    assert not store.exists()


def test_sweep_from_python_returns_the_results_in_grid_order(tmp_path: Path) -> None:
    results = palaestra.sweep(
        _run_file(tmp_path),
        seeds=[1, 2],
        grid={MAX_ITER: [3]},
        parallel=2,
        store_uri=f"sqlite:///{tmp_path}/s.db",
    )
    assert [(r.run_uid, r.status) for r in results] == [
        ("dummy-run-seed1-max_iter3", "finished"),
        ("dummy-run-seed2-max_iter3", "finished"),
    ]
    assert [r.overrides["seed"] for r in results] == [1, 2]
    assert {r.experiment_uid for r in results} == {"dummy-experiments"}
    for result in results:
        assert len(result.muscle_actions()) == _agent_steps(_document(), max_iter=3)


def test_a_run_after_one_interrupted_by_ctrl_c_runs(tmp_path: Path) -> None:
    """A notebook's interrupt stops its run (cancelled); the next ``palaestra.run`` in the same
    kernel raised ``KeyboardInterrupt`` at once, checking its run file, as every later one
    did: the interrupt stayed recorded in the calling process. It runs."""
    interrupted = _document()
    environment = interrupted["schedule"][0]["phase_0"]["environments"][0]["environment"]
    environment.update(name="strays:InterruptingEnvironment", params={"max_iter": 100000})
    found = _script(
        tmp_path,
        f"""
        import json, os, signal, sys
        sys.path.insert(0, {str(PLUGINS)!r})
        import palaestra

        os.environ["INTERRUPT_PID"] = str(os.getpid())
        first = palaestra.run({interrupted!r})
        try:
            second = palaestra.run({str(_run_file(tmp_path))!r})
        except KeyboardInterrupt:
            print(json.dumps("the second run raised KeyboardInterrupt"))
            raise SystemExit(0)
        print(json.dumps([[r.status, r.exit_code, r.reason] for r in (first, second)]))
        """,
    )
    assert found == [["cancelled", 130, "interrupted by SIGINT"], ["finished", 0, ""]]


def test_a_plugin_edited_between_two_runs_runs_as_edited(tmp_path: Path) -> None:
    """A plug-in module edited between two ``palaestra.run`` calls in one process (a REPL, a
    notebook's kernel): the second run ran the module as the first had imported it, its
    ``setup`` that now raises not called and the run ``finished`` (an executor forked from the
    caller), and a class added since was refused as missing (the run file's check, in the
    caller). Each run imports the plug-ins it was not given imported anew."""
    module = tmp_path / "edited_plugins.py"
    brain = "from palaestra.agent.dummy_brain import DummyBrain\n\n\nclass Edited(DummyBrain):\n"
    module.write_text(brain + "    pass\n")
    document = _document()
    document["schedule"][0]["phase_0"]["agents"][0]["brain"]["name"] = "edited_plugins:Edited"
    edited = brain + "    def setup(self):\n        raise RuntimeError('as edited')\n"
    added = "\n\nclass Added(DummyBrain):\n    pass\n"
    found = _script(
        tmp_path,
        f"""
        import json, pathlib
        import palaestra

        document = {document!r}
        results = [palaestra.run(document)]
        pathlib.Path({str(module)!r}).write_text({edited + added!r})
        results.append(palaestra.run(document))
        document["schedule"][0]["phase_0"]["agents"][0]["brain"]["name"] = "edited_plugins:Added"
        results.append(palaestra.run(document))
        print(json.dumps([[r.status, r.reason.splitlines()[:1]] for r in results]))
        """,
    )
    assert found[0] == ["finished", []]
    assert found[1][0] == "error" and "RuntimeError: as edited" in found[1][1][0], found
    assert found[2] == ["finished", []]


def _beside_the_run_file(tmp_path: Path, module: str) -> None:
    """``experiments/run.yml`` (the dummy run's first phase) whose defender's Brain is
    ``module:BesideBrain``, a module in ``experiments/`` beside it."""
    experiments = tmp_path / "experiments"
    experiments.mkdir()
    (experiments / f"{module}.py").write_text(
        "from palaestra.agent.dummy_brain import DummyBrain\n\n\n"
        "class BesideBrain(DummyBrain):\n    pass\n"
    )
    document = _document()
    document["schedule"][0]["phase_0"]["agents"][0]["brain"]["name"] = f"{module}:BesideBrain"
    YAML(typ="safe").dump(document, experiments / "run.yml")


def test_run_finds_plugins_beside_the_run_file_as_experiment_start_does(tmp_path: Path) -> None:
    """A script in another directory than its run file: the run file's directory goes on the
    import path (then the working directory), as for ``experiment-start``."""
    _beside_the_run_file(tmp_path, "beside_plugins")
    found = _script(
        tmp_path,
        """
        import json, sys
        import palaestra

        assert not any(p.endswith("experiments") for p in sys.path)
        result = palaestra.run("experiments/run.yml")
        print(json.dumps(dict(status=result.status, reason=result.reason)))
        """,
    )
    assert found == {"status": "finished", "reason": ""}


def test_run_in_a_notebook_finds_plugins_beside_the_run_file(tmp_path: Path) -> None:
    """In a Jupyter kernel (nbclient runs the notebook; the kernel's threads make the run's
    executor a fresh interpreter), from the notebook's directory."""
    nbformat = pytest.importorskip(
        "nbformat", reason="the notebook extra: pip install -e '.[notebook]'"
    )
    nbclient = pytest.importorskip(
        "nbclient", reason="the notebook extra: pip install -e '.[notebook]'"
    )
    _beside_the_run_file(tmp_path, "notebook_plugins")
    cell = (
        "import palaestra\n"
        'result = palaestra.run("experiments/run.yml")\n'
        "print(result.status, result.exit_code, repr(result.reason))"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    client = nbclient.NotebookClient(
        notebook, timeout=90, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # and shuts the kernel down
    (output,) = notebook.cells[0].outputs
    assert output["text"] == "finished 0 ''\n"
    deadline = time.monotonic() + 10  # the kernel and the run's processes end: bounded wait
    while _working_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _working_in(tmp_path)


def _working_in(directory: Path) -> list[tuple[int, str]]:
    """The processes whose working directory is ``directory`` (the kernel's and its run's)."""
    found = []
    for pid in procfs.pids():
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(directory):
                found.append((pid, procfs.cmdline(pid)))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found
