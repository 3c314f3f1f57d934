"""What palaestrAI-style learning agents rely on: tagged dumps stored whole and loaded back by
tag (by the Brain and, in a test phase, by the Muscles), statistics in the store, and every
Muscle acting with the newest policy (``tests/plugins/tagged_learning.py``)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from palaestra.store import query
from tests.conftest import Workspace
from tests.plugins.tagged_learning import RB_BYTES

pytestmark = pytest.mark.timeout(120)

EPISODES = 2
STEPS = 5
"""Actions per episode: the environment's ``max_iter``."""
TRAINED = EPISODES * STEPS
"""The weight the train phase ends with: +1 per experience of an action (all but the one
asking for the first action of an episode)."""


def run_file(path: Path, *, test_phase: str, workers: int = 1, brain: str = "TaggedBrain") -> Path:
    muscle = "VersionMuscle" if brain == "NewestPolicyBrain" else "TaggedMuscle"
    text = f"""
uid: learning-run
experiment_uid: learning
seed: 7
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: env
            params: {{discrete: true, max_iter: {STEPS}}}
      agents:
        - name: learner
          brain: {{name: tagged_learning:{brain}, params: {{}}}}
          muscle: {{name: tagged_learning:{muscle}, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0]
          actuators: [env.0]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - {{name: palaestra.simulation:VanillaSimControllerTerminationCondition, params: {{}}}}
      phase_config: {{mode: train, worker: {workers}, episodes: {EPISODES}}}
{test_phase}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
    path.write_text(text)
    return path


TEST_PHASE = f"""
  - test:
      agents:
        - name: learner
          brain: {{name: tagged_learning:TaggedBrain, params: {{}}}}
          muscle: {{name: tagged_learning:TaggedMuscle, params: {{expect: {TRAINED}}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0]
          actuators: [env.0]
          LOAD
      phase_config: {{mode: test, worker: 1, episodes: 1}}
"""


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def config(ws: Workspace, store_uri: str) -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: {store_uri}\ndata_path: ./_outputs\n")
    return str(path)


@pytest.mark.parametrize("load", ["", "load: {agent: learner, experiment_run: learning-run}"])
def test_a_test_phase_acts_with_the_tagged_dumps_of_the_train_phase(
    workspace: Workspace, load: str
) -> None:
    """Three tagged dumps per store, each written through a BytesIO left at its end: all are
    stored whole, the Brain loads each by its tag, and the test phase's Muscle loads the actor
    in ``prepare_model`` and acts with it from its first step."""
    path = run_file(workspace.path / "run.yml", test_phase=TEST_PHASE.replace("LOAD", load))

    result = workspace.run("-c", config(workspace, workspace.store_uri), "start", str(path))

    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR " not in result.stderr and " WARNING " not in result.stderr, result.stderr
    newest = rows(
        workspace.store,
        "select b.tag, length(b.dump), b.dump from brain_states b "
        "join agents a on a.id = b.agent_id "
        "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
        "where p.name = 'train' "
        "and b.id in (select max(id) from brain_states group by agent_id, tag) "
        "order by b.tag",
    )
    assert [(tag, size) for tag, size, _ in newest] == [
        ("actor", len(json.dumps({"weight": TRAINED}))),
        ("critic", len(json.dumps({"weight": -TRAINED}))),
        ("rb", RB_BYTES),
    ]
    assert json.loads(newest[0][2]) == {"weight": TRAINED}
    acted = query.statistics(
        "learning-run", phase="test", source="muscle", store_uri=workspace.store_uri
    )
    assert acted["step"].tolist()[:2] == [0, 1]
    assert {v["acted_with"] for v in acted["statistics"]} == {TRAINED}
    loaded = query.statistics(
        "learning-run", phase="test", source="brain", expand=True, store_uri=workspace.store_uri
    )
    assert loaded["statistic.loaded_weight"].dropna().tolist() == [TRAINED]


def test_tagged_dumps_carry_over_among_the_files_without_a_store(workspace: Workspace) -> None:
    path = run_file(workspace.path / "run.yml", test_phase=TEST_PHASE.replace("LOAD", ""))

    result = workspace.run("-c", config(workspace, "none"), "start", str(path))

    assert result.returncode == 0, result.stderr[-3000:]
    files = sorted(p.name for p in (workspace.path / "_outputs").rglob("*.bin"))
    assert files == sorted(["learner-actor.bin", "learner-critic.bin", "learner-rb.bin"] * 2)


def test_statistics_are_stored_per_update_and_exported(workspace: Workspace) -> None:
    path = run_file(workspace.path / "run.yml", test_phase="")

    result = workspace.run("-c", config(workspace, workspace.store_uri), "start", str(path))

    assert result.returncode == 0, result.stderr[-3000:]
    brain = query.statistics("learning-run", source="brain", store_uri=workspace.store_uri)
    assert [v["weight"] for v in brain["statistics"]] == list(range(1, TRAINED + 1))
    first = brain.iloc[0]
    assert (first["worker"], first["episode"], first["step"]) == (0, 0, 1)
    assert first["statistics"] == {"weight": 1, "loss": 1.0, "grads": [0, 1, 2]}
    muscle = query.statistics("learning-run", source="muscle", store_uri=workspace.store_uri)
    assert len(muscle) == EPISODES * STEPS  # one per action

    export = workspace.run("results", "learning-run", "--table", "statistics", "--source", "brain")
    assert export.returncode == 0, export.stderr
    exported = list(csv.DictReader(io.StringIO(export.stdout)))
    assert len(exported) == TRAINED
    assert json.loads(exported[-1]["statistics"])["weight"] == TRAINED
    assert exported[0]["agent"] == "learner" and exported[0]["source"] == "brain"


def test_every_muscle_acts_with_the_newest_policy(workspace: Workspace) -> None:
    """The first experience and then only worker 0's make updates; the other workers get the
    newest at their next step (the Brain fails the run if a Muscle acted with an older policy),
    so each acts with a version above 0 from its second action on, whatever the order."""
    path = run_file(
        workspace.path / "run.yml", test_phase="", workers=3, brain="NewestPolicyBrain"
    )

    result = workspace.run("-c", config(workspace, workspace.store_uri), "start", str(path))

    assert result.returncode == 0, result.stderr[-3000:]
    versions = query.statistics("learning-run", source="muscle", store_uri=workspace.store_uri)
    for worker in (1, 2):
        acted = [v["version"] for v in versions[versions["worker"] == worker]["statistics"]]
        assert acted and max(acted) > 0, acted


def test_a_statistic_the_store_cannot_hold_fails_the_run_naming_it(workspace: Workspace) -> None:
    path = run_file(workspace.path / "run.yml", test_phase="", brain="UnstorableStatisticBrain")

    result = workspace.run("-c", config(workspace, workspace.store_uri), "start", str(path))

    assert result.returncode == 1, result.stderr[-3000:]
    assert "tagged_learning:UnstorableStatisticBrain.add_statistics" in result.stderr
    assert "statistic 'model': a builtins.object has no form the store can hold" in result.stderr
    assert workspace.instance_status()[0] == "error"
    stored = query.statistics("learning-run", source="brain", store_uri=workspace.store_uri)
    assert [v["weight"] for v in stored["statistics"]] == [1, 2]  # the rows before it are kept
