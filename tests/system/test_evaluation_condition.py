"""palaestrAI's AgentEvaluationObjectiveTerminationCondition: a phase ended by evaluations.

Every ``evaluate_every`` training episodes the worker plays one evaluation rollout (the Muscle
in test mode: PushMuscle then pushes 0.5, its Brain is told nothing), then the Brain's
``evaluate_rollouts`` returns a score (EvaluatingBrain: ``start + rise * evaluation``), and
the condition's rules decide whether the phase ends. The store keeps every episode the worker
played, evaluation rollouts in their place in the worker's sequence.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from palaestra.store import rows
from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(90)

RUN_FILE = """\
uid: evaluation
experiment_uid: evaluation
seed: 5
version: "3.5"
schedule:
  - training:
      environments:
        - environment:
            name: palaestrai_style:CounterEnvironment
            uid: counter
            params: {max_steps: 3}
      agents:
        - name: pusher
          brain:
            name: evaluation_plugins:EvaluatingBrain
            params: {log: LOG, start: START, rise: RISE}
          muscle: {name: palaestrai_style:PushMuscle, params: {}}
          objective: {name: palaestrai_style:PushObjective, params: {}}
          sensors: [counter.count]
          actuators: [counter.push]
      simulation:
        name: palaestrai.simulation:Vanilla
        params: {driver: DRIVER}
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: WORKERS, CAPevaluate_every: EVERY}
run_config:
  condition:
    name: palaestrai.experiment:AgentEvaluationObjectiveTerminationCondition
    params:
      agents:
        pusher: RULES
"""
SUCCESS = (
    "{success: {metric: score, threshold: 0.35, direction: greater_equal, consecutive: 2, "
    "min_evaluations: 3}}"
)
PLATEAU = (
    "{plateau: {metric: score, direction: maximize, min_delta: 0.01, patience: 2, "
    "min_evaluations: 1, window: 1}}"
)


def write(
    workspace: Workspace,
    rules: str,
    start: float,
    rise: float,
    every: int,
    workers: int = 1,
    driver: str = "auto",
    cap: bool = True,
) -> tuple[Path, Path]:
    log = workspace.path / "evaluations.jsonl"
    text = RUN_FILE
    for key, value in (
        ("CAP", "episodes: 20, " if cap else ""),
        ("DRIVER", driver),
        ("LOG", str(log)),
        ("START", str(start)),
        ("RISE", str(rise)),
        ("EVERY", str(every)),
        ("WORKERS", str(workers)),
        ("RULES", rules),
    ):
        text = text.replace(key, value)
    path = workspace.path / "evaluation.yml"
    path.write_text(text)
    return path, log


def run(
    workspace: Workspace,
    rules: str,
    start: float,
    rise: float,
    every: int,
    driver: str = "auto",
    cap: bool = True,
) -> tuple[list[dict[str, Any]], list[set[float]]]:
    """Run the file; the Brain's evaluate_rollouts calls and each episode's set points."""
    path, log = write(workspace, rules, start, rise, every, driver=driver, cap=cap)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert workspace.instance_status()[0] == "finished"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    episodes: dict[int, set[float]] = {}
    with sqlite3.connect(workspace.store) as conn:
        for episode, setpoints in conn.execute(
            "select episode, actuator_setpoints from muscle_actions order by id"
        ):
            episodes.setdefault(episode, set()).add(json.loads(setpoints)["counter.push"])
        (instance,) = conn.execute("select uid from experiment_run_instances").fetchone()
        states = {e for (e,) in conn.execute("select distinct episode from world_states")}
    assert states == set(episodes)  # the environment numbers the rollouts as the Muscle does
    assert all(c["instance"] == instance for c in calls)
    return calls, [episodes[e] for e in sorted(episodes)]


@pytest.mark.parametrize(
    ("driver", "cap"),
    [("environment", True), ("controller", False)],
    ids=["environment-driven, 20 episodes", "controller-driven, no episodes (cap-free)"],
)
def test_a_rising_score_ends_the_phase_by_success_before_its_episodes(
    workspace: Workspace, driver: str, cap: bool
) -> None:
    """Scores 0.1, 0.2, 0.3, 0.4, 0.5: the 4th and 5th pass 0.35, two in a row."""
    calls, episodes = run(workspace, SUCCESS, start=0.1, rise=0.1, every=1, driver=driver, cap=cap)
    assert [c["episode"] for c in calls] == [0, 1, 2, 3, 4]
    assert {(c["run"], c["phase"], c["agent"]) for c in calls} == {("evaluation", 0, "pusher")}
    assert len(episodes) == 10  # 5 training episodes, each followed by an evaluation
    assert all(episodes[e] == {0.5} for e in range(1, 10, 2))  # test mode
    assert all(episodes[e] != {0.5} for e in range(0, 10, 2))
    # the Brain heard of training episodes only, the same number of messages each
    assert [c["seen"] for c in calls] == [calls[0]["seen"] * k for k in range(1, 6)]


def test_a_flat_score_ends_the_phase_by_plateau(workspace: Workspace) -> None:
    """1.0 every time: best at the first evaluation, no improvement at the next two."""
    calls, episodes = run(workspace, PLATEAU, start=1.0, rise=0.0, every=2)
    assert [c["episode"] for c in calls] == [0, 1, 2]
    assert len(episodes) == 9  # 3 x (2 training episodes, 1 evaluation)
    assert [e for e in range(9) if episodes[e] == {0.5}] == [2, 5, 8]
    # the phase's episodes count its training episodes against its plan, the rollouts apart
    # (they were counted in: 9 of the plan's 20 shown done, by experiment-list 9/20)
    (done,) = rows.episodes_done(store_uri=workspace.store_uri)
    assert (done["done"], done["evaluations"]) == (6, 3)
    shown = workspace.run("experiment-show", "evaluation")
    assert " 6/20 (+3 evaluations) " in shown.stdout, shown.stdout


def test_an_unreached_rule_leaves_the_phase_its_episodes(workspace: Workspace) -> None:
    rules = SUCCESS.replace("0.35", "100")
    calls, episodes = run(workspace, rules, start=0.1, rise=0.1, every=7)
    assert [c["episode"] for c in calls] == [0, 1]  # after episodes 7 and 14 of 20
    assert len(episodes) == 22


def test_more_than_one_worker_is_refused(workspace: Workspace) -> None:
    path, _ = write(workspace, SUCCESS, start=0.1, rise=0.1, every=1, workers=2)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "schedule[0].training.phase_config.worker: expected 1 worker, got 2" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_result_that_is_no_evaluation_result_fails_the_run_naming_the_method(
    workspace: Workspace,
) -> None:
    path, _ = write(workspace, SUCCESS, start=0.1, rise=0.1, every=1)
    path.write_text(path.read_text().replace("rise: 0.1}", "rise: 0.1, wrong: true}"))
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "evaluate_rollouts" in result.stderr and "expected an EvaluationResult" in result.stderr
    assert workspace.instance_status()[0] == "error"
