"""A palaestrAI-style environment (EnvironmentBaseline, EnvironmentState with SimTime and
``truncated``, its own ``rng`` and ``seed``, no readings in its last step) runs through the
CLI, with a train and a test phase, and its sim time is stored with each step."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: simtime-run
experiment_uid: parity
seed: 3
version: "3.4"
schedule:
  - train:
      environments:
        - environment:
            name: parity_style:SimTimeEnvironment
            uid: style
            params: {max_iter: 4, num_sensors: 2}
      agents:
        - name: agent
          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [style.Sensor-0, style.Sensor-1]
          actuators: [style.Actuator-0, style.Actuator-1]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 2}
  - test:
      phase_config: {mode: test, worker: 1, episodes: 1}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


def test_a_palaestrai_style_environment_runs_and_its_sim_time_is_stored(
    workspace: Workspace,
) -> None:
    path = workspace.path / "run.yml"
    path.write_text(RUN)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    assert workspace.instance_status()[0] == "finished"
    with sqlite3.connect(workspace.store) as conn:
        rows = conn.execute(
            "select episode, step, sensors, done from world_states order by id"
        ).fetchall()
        # 2 + 1 episodes of 4 steps; the last step of each reported no readings
        assert [(step, bool(done)) for _, step, _, done in rows] == [
            (s, s == 4) for s in (1, 2, 3, 4)
        ] * 3
        for _, _, sensors, _ in rows:
            assert sorted(json.loads(sensors)) == ["style.Sensor-0", "style.Sensor-1"]
        stored = [
            json.loads(text) if text is not None else None
            for (text,) in conn.execute("select simtime from world_states order by id")
        ]
    assert [s["simtime_ticks"] for s in stored] == [101, 102, 103, 104] * 3
    assert stored[0]["simtime_timestamp"] == "2024-01-01T12:01:00"
