"""palaestrAI's import paths in palaestra runs: plug-ins and a run file written for palaestrAI.

The plug-in module ``tests/plugins/palaestrai_style.py`` imports only from ``palaestrai.*``,
and the run file names palaestrAI's built-ins (``palaestrai.simulation:Vanilla``, ...); both
run unchanged through the real CLI, with and without a (stand-in) real ``palaestrai``
distribution on the path.
"""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Workspace

RUN_FILE = """\
uid: palaestrai-style
experiment_uid: palaestrai-style-experiment
seed: 7
version: "3.5"
schedule:
  - training:
      environments:
        - environment:
            name: palaestra_style_env_placeholder
            uid: counter
            params: {max_steps: 5}
      agents:
        - name: pusher
          brain: {name: palaestrai_style:GainBrain, params: {}}
          muscle: {name: palaestrai_style:PushMuscle, params: {}}
          objective: {name: palaestrai_style:PushObjective, params: {}}
          sensors: [counter.count, counter.noise]
          actuators: [counter.push]
        - name: dummy
          brain: {name: palaestrai.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: palaestrai.agent.dummy_muscle:DummyMuscle, params: {}}
          objective: {name: palaestrai.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [counter.count]
          actuators: []
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 2}
  - testing:
      phase_config: {mode: test, episodes: 1}
run_config:
  condition:
    name: palaestrai.experiment:VanillaRunGovernorTerminationCondition
    params: {}
""".replace("palaestra_style_env_placeholder", "palaestrai_style:CounterEnvironment")


def write_run_file(workspace: Workspace) -> Path:
    path = workspace.path / "palaestrai_style.yml"
    path.write_text(RUN_FILE)
    return path


def stand_in_palaestrai(where: Path) -> Path:
    """A tiny package named ``palaestrai`` (as a real installation would be), in ``where``."""
    package = where / "site" / "palaestrai"
    (package / "agent").mkdir(parents=True)
    (package / "__init__.py").write_text("STAND_IN = True\n")
    (package / "agent" / "__init__.py").write_text(
        "class Brain:\n    pass\n\n\nclass Muscle:\n    pass\n"
    )
    return package.parent


def run_and_check(workspace: Workspace) -> None:
    run_file = write_run_file(workspace)
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ERROR" not in result.stderr, result.stderr[-3000:]

    with sqlite3.connect(workspace.store) as conn:
        status = conn.execute("select status from experiment_run_instances").fetchall()
        assert status == [("finished",)]
        steps = conn.execute("select count(*) from world_states").fetchone()[0]
        assert steps == 3 * 5  # 2 training episodes and 1 test episode of 5 steps
        rows = conn.execute(
            "select p.mode, m.actuator_setpoints, m.objective from muscle_actions m"
            " join agents a on a.id = m.agent_id"
            " join experiment_run_phases p on p.id = a.experiment_run_phase_id"
            " where a.name = 'pusher' order by m.id"
        ).fetchall()
    assert len(rows) == 3 * 5
    pushes = {mode: [] for mode, _, _ in rows}  # type: dict[str, list[float]]
    for mode, setpoints, _ in rows:
        pushes[mode].append(json.loads(setpoints)["counter.push"])
    # training: the Brain's answers (0.35, 0.45, ...) reached the Muscle; testing compares
    # the mode with palaestrAI's Mode.TEST and pushes 0.5
    assert pushes["train"][:3] == pytest.approx([0.35, 0.45, 0.55])
    assert pushes["test"] == [0.5] * 5
    assert all(
        objective == pytest.approx(1 + push)
        for (_, _, objective), push in zip(rows, pushes["train"] + pushes["test"], strict=True)
    )


def test_palaestrai_style_plugins_and_builtins_run_unchanged(workspace: Workspace) -> None:
    run_and_check(workspace)


def test_palaestra_names_take_precedence_over_an_installed_palaestrai(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a ``palaestrai`` package on the path (as a migrating user has), palaestra's
    processes still map ``palaestrai.*`` onto palaestra."""
    site = stand_in_palaestrai(workspace.path)
    # ahead of palaestra itself on the path
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    run_and_check(workspace)


def test_a_module_palaestra_does_not_offer_is_refused_naming_what_to_use(
    workspace: Workspace,
) -> None:
    run_file = workspace.path / "store.yml"
    run_file.write_text(
        RUN_FILE.replace("palaestrai_style:GainBrain", "palaestrai.store.query:ExperimentRunQuery")
    )
    result = workspace.run("experiment-check-syntax", str(run_file))
    assert result.returncode == 2, result.stderr
    message = textwrap.dedent(result.stderr)
    assert "palaestrai.store.query" in message
    assert "palaestra.store.query" in message


RESET_RUN_FILE = """\
uid: reset-run
experiment_uid: reset-experiment
seed: 3
version: "3.5"
schedule:
  - first:
      environments:
        - environment: {name: palaestrai_reset:ResetRecordingEnvironment, uid: env, params: {}}
      agents:
        - name: a
          brain: {name: palaestrai.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: palaestrai.agent.dummy_muscle:DummyMuscle, params: {}}
          objective: {name: palaestrai.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [env.resets]
          actuators: [env.act]
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 2, episodes: 2}
  - second:
      phase_config: {mode: test, worker: 1, episodes: 3}
run_config:
  condition:
    name: palaestrai.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


def test_an_environment_overriding_palaestrais_reset_is_given_the_request(
    workspace: Workspace,
) -> None:
    """``async def reset(self, request)`` gets palaestrAI's request (its public fields) before
    every episode but a worker's first, and what it returns starts the episode."""
    run_file = workspace.path / "reset.yml"
    run_file.write_text(RESET_RUN_FILE)
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ERROR" not in result.stderr, result.stderr[-3000:]

    with sqlite3.connect(workspace.store) as conn:
        (instance,) = conn.execute("select uid from experiment_run_instances").fetchone()
        readings = conn.execute(
            'select p."index", m.worker, m.episode, m.sensor_readings from muscle_actions m'
            " join agents a on a.id = m.agent_id"
            " join experiment_run_phases p on p.id = a.experiment_run_phase_id"
            ' where m.step = 0 order by p."index", m.worker, m.episode'
        ).fetchall()
    lines = (workspace.path / "resets.jsonl").read_text().splitlines()
    seen = [json.loads(line) for line in lines]
    # phase 0: 2 workers x 1 reset; phase 1: 1 worker x 2 resets
    assert len(seen) == 4
    expected = {
        "type": "EnvironmentResetRequest",
        "receiver_environment_id": "env",
        "receiver": "env",
        "experiment_run_id": "reset-run",
        "experiment_run_instance_id": instance,
    }
    for request in seen:
        assert {k: request[k] for k in expected} == expected
        assert request["sender"] == request["sender_simulation_controller_id"]
    assert sorted((r["experiment_run_phase"], r["sender"]) for r in seen) == [
        (0, "SimulationController-0"),
        (0, "SimulationController-1"),
        (1, "SimulationController-0"),
        (1, "SimulationController-0"),
    ]
    # the reset's answer started the episode: its sensor counts this worker's resets
    first_readings = [
        (phase, worker, episode, json.loads(r)["env.resets"])
        for phase, worker, episode, r in readings
    ]
    assert first_readings == [
        (0, 0, 0, 0.0), (0, 0, 1, 1.0), (0, 1, 0, 0.0), (0, 1, 1, 1.0),
        (1, 0, 0, 0.0), (1, 0, 1, 1.0), (1, 0, 2, 2.0),
    ]  # fmt: skip
