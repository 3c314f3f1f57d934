"""paldaque (palaestrAI's analysis tool) reads what ``palaestra export palaestrai`` wrote:
its commands ``experiment``, ``experiment-run``, ``experiment-run-instance``,
``experiment-run-phase`` and ``muscle-action``, each run as paldaque's own process, print
palaestra's own view of the runs (:mod:`palaestra.store.rows`). Skips, saying so, where
paldaque is not installed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from palaestra.store import rows
from tests.conftest import wait_until_gone
from tests.system.curve_runs import invoke
from tests.system.palaestrai_export_runs import AGENTS, EXPERIMENT, RUNS, exported_runs

pytestmark = pytest.mark.timeout(180)


def paldaque() -> str:
    """paldaque's command beside this Python's, or a skip naming what is missing."""
    if importlib.util.find_spec("paldaque") is None:
        pytest.skip("needs paldaque (not importable): pip install paldaque==3.5.5")
    found = shutil.which("paldaque", path=str(Path(sys.executable).parent)) or shutil.which(
        "paldaque"
    )
    if found is None:
        pytest.skip("needs paldaque's command (paldaque is importable, its script is missing)")
    return found


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Printed]:
    """What paldaque prints of the export of both runs (into a palaestrAI store on SQLite),
    by command, and the store palaestra exported from."""
    paldaque()
    workspace = exported_runs(tmp_path_factory)
    target = f"sqlite:///{workspace.path / 'palaestrai-for-paldaque.db'}"
    result = invoke(workspace, "export", "palaestrai", *RUNS, "--to", target, "--replace")
    assert result.exit_code == 0, result.stderr
    total = sum(len(rows.muscle_actions(uid, store_uri=workspace.store_uri)) for uid in RUNS)
    commands = {
        "experiment": (),
        "experiment-run": (),
        "experiment-run-instance": (),
        "experiment-run-phase": (),
        "muscle-action": ("--max-read", str(total), "--full-console-output"),
    }
    tables = {
        command: table(target, workspace.path, command, *options)
        for command, options in commands.items()
    }
    yield Printed(workspace.store_uri, tables)
    assert not wait_until_gone(workspace.sessions)


@dataclass
class Printed:
    store: str
    tables: dict[str, list[dict[str, str]]]


def table(target: str, cwd: Path, *command: str) -> list[dict[str, str]]:
    """The rows of the table ``paldaque -s TARGET COMMAND`` prints, by column."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA")}
    done = subprocess.run(
        [paldaque(), "-s", target, *command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert len(lines) >= 2, done.stdout
    header, *body = (
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in (lines[0], *lines[2:])
    )
    return [dict(zip(header, cells, strict=True)) for cells in body]


def test_paldaque_prints_palaestras_view_of_the_exported_runs(printed: Printed) -> None:
    store, tables = printed.store, printed.tables

    assert tables["experiment"] == [{"experiment_id": "1", "experiment_name": EXPERIMENT}]
    runs = tables["experiment-run"]
    assert [(r["run_uid"], r["experiment_id"]) for r in runs] == [(uid, "1") for uid in RUNS]
    run_ids = {r["run_id"]: r["run_uid"] for r in runs}
    instances = tables["experiment-run-instance"]
    assert [(run_ids[i["run_id"]], i["instance_uid"]) for i in instances] == [
        (uid, found["instance_uid"])
        for uid in RUNS
        for found in rows.runs(run=uid, store_uri=store)
    ]
    instance_runs = {i["instance_id"]: run_ids[i["run_id"]] for i in instances}
    assert sorted(
        (instance_runs[p["instance_id"]], p["phase_number"], p["phase_uid"], p["phase_mode"])
        for p in tables["experiment-run-phase"]
    ) == sorted(
        (uid, str(p["phase"]), p["name"], p["mode"])
        for uid in RUNS
        for p in rows.phases(uid, store_uri=store)
    )
    palaestras = {uid: rows.muscle_actions(uid, store_uri=store) for uid in RUNS}
    actions = tables["muscle-action"]
    assert len(actions) == sum(len(found) for found in palaestras.values())
    assert {a["agent_name"] for a in actions} == set(AGENTS)
    assert Counter(
        (
            run_ids[a["run_id"]],
            a["agent_name"],
            a["phase_mode"],
            a["rollout_worker_uid"],
            round(float(a["objective"]), 3),
        )
        for a in actions
    ) == Counter(
        (
            uid,
            a["agent"],
            a["mode"],
            f"Muscle-{a['agent']}-{a['worker']}",
            round(a["objective"], 3),
        )
        for uid, found in palaestras.items()
        for a in found
    )


def test_paldaque_shows_each_actions_readings_set_points_and_rewards(printed: Printed) -> None:
    # one Muscle's actions, in the order it made them (paldaque prints no episode or step)
    learner = rows.muscle_actions(
        "export-a", store_uri=printed.store, phase=0, agent="learner", worker=0
    )
    (run_a,) = [
        r["run_id"] for r in printed.tables["experiment-run"] if r["run_uid"] == "export-a"
    ]

    shown = [
        a
        for a in printed.tables["muscle-action"]
        if a["run_id"] == run_a
        and a["phase_mode"] == "train"
        and a["rollout_worker_uid"] == "Muscle-learner-0"
    ]

    assert len(shown) == len(learner) == 8
    for action, step in zip(shown, learner, strict=True):
        for kind, values in (
            ("sensor", step["sensor_readings"]),
            ("actuator", step["actuator_setpoints"]),
            ("reward", step["rewards"]),
        ):
            for uid, value in values.items():
                assert float(action[f"('{kind}', '{uid}')"]) == pytest.approx(value, rel=1e-5)
        assert action["simticks_style"] == ("" if step["step"] == 0 else str(100 + step["step"]))
