"""Two small runs for the tests of ``palaestra export palaestrai`` (here and in
tests/published): an environment with simulation times, two workers in the train phase, one
in the test phase, a Brain and a Muscle that record statistics, a Brain that stores a tagged
dump. Made once per test session."""

from __future__ import annotations

import pytest

from tests.conftest import Workspace, wait_until_gone

RUN = """\
uid: {uid}
experiment_uid: export-tests
seed: {seed}
version: "3.4"
schedule:
  - train:
      environments:
        - environment:
            name: parity_style:SimTimeEnvironment
            uid: style
            params: {{max_iter: 4, num_sensors: 2}}
      agents:
        - name: learner
          brain: {{name: episode_ends:EndsBrain, params: {{}}}}
          muscle: {{name: curve_plugins:StatisticMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [style.Sensor-0]
          actuators: [style.Actuator-0]
        - name: tagger
          brain: {{name: dump_tags:TaggingBrain, params: {{tag: best}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [style.Sensor-1]
          actuators: [style.Actuator-1]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 2, episodes: 2}}
  - test:
      phase_config: {{mode: test, worker: 1, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
RUNS = {"export-a": 5, "export-b": 6}
"""The runs' uids and seeds."""
EXPERIMENT = "export-tests"
AGENTS = ("learner", "tagger")
_SHARED: list[Workspace] = []


def exported_runs(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A workspace whose store holds the runs of :data:`RUNS`, made once per test session."""
    if not _SHARED:
        workspace = Workspace(tmp_path_factory.mktemp("palaestrai-export"))
        for uid, seed in RUNS.items():
            path = workspace.path / f"{uid}.yml"
            path.write_text(RUN.format(uid=uid, seed=seed))
            result = workspace.run("experiment-start", "-q", str(path))
            assert result.returncode == 0, result.stderr
        assert not wait_until_gone(workspace.sessions)
        _SHARED.append(workspace)
    return _SHARED[0]
