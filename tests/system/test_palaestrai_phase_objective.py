"""palaestrAI's AgentObjectiveTerminationCondition as the run's condition: ``phase_avgN``.

At the end of each episode of a worker the agent's Brain notes its average objective (over its
whole memory: every step it was told of so far in the phase); the phase ends once the mean of
a worker's last N such averages reaches X. The expected end is computed here from the
objectives the run stored, by that rule; the phase's ``episodes`` stays the upper bound.
"""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(90)

RUN_FILE = """\
uid: phase-objective
experiment_uid: phase-objective
seed: 5
version: "3.5"
schedule:
  - training:
      environments:
        - environment:
            name: palaestrai_style:CounterEnvironment
            uid: counter
            params: {max_steps: 5}
      agents:
        - name: pusher
          brain: {name: palaestrai_style:GainBrain, params: {}}
          muscle: {name: palaestrai_style:PushMuscle, params: {}}
          objective: {name: palaestrai_style:PushObjective, params: {}}
          sensors: [counter.count]
          actuators: [counter.push]
      simulation:
        name: palaestrai.simulation:Vanilla
        conditions:
          - name: palaestrai.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: WORKERS, episodes: 12}
run_config:
  condition:
    name: palaestrai.experiment:AgentObjectiveTerminationCondition
    params:
      pusher: {phase_avg3: THRESHOLD}
"""


def run(
    workspace: Workspace, workers: int, threshold: float, dump: str = ""
) -> dict[int, list[list[float]]]:
    """Run the file (``dump``: the agent's dump policy, if any); the objectives of each
    worker's episodes, in order."""
    path = workspace.path / "phase_objective.yml"
    text = RUN_FILE.replace("WORKERS", str(workers)).replace("THRESHOLD", str(threshold))
    if dump:
        text = text.replace("[counter.push]\n", f"[counter.push]\n          dump: {dump}\n")
        assert "dump:" in text
    path.write_text(text)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ERROR" not in result.stderr, result.stderr[-3000:]
    assert workspace.instance_status()[0] == "finished"
    episodes: dict[int, list[list[float]]] = {}
    with sqlite3.connect(workspace.store) as conn:
        for worker, episode, objective in conn.execute(
            "select worker, episode, objective from muscle_actions order by id"
        ):
            rows = episodes.setdefault(worker, [])
            while len(rows) <= episode:
                rows.append([])
            rows[episode].append(objective)
    return episodes


def first_reached(episodes: list[list[float]], window: int, threshold: float) -> int | None:
    """The number of episodes after which the rule holds, with one worker: the Brain's
    average objective at each episode's end is the mean of every objective so far."""
    averages = []
    seen: list[float] = []
    for count, objectives in enumerate(episodes, start=1):
        seen.extend(objectives)
        averages.append(sum(seen) / len(seen))
        if len(averages) >= window and sum(averages[-window:]) / window >= threshold:
            return count
    return None


def test_the_phase_ends_when_the_average_objective_of_the_last_episodes_reaches_the_rule(
    workspace: Workspace,
) -> None:
    episodes = run(workspace, workers=1, threshold=1.82)[0]
    assert 3 < len(episodes) < 12  # ended by the rule, neither at once nor by `episodes`
    assert first_reached(episodes, 3, 1.82) == len(episodes)


def test_the_rule_follows_every_episode_whichever_the_dumps_follow(
    workspace: Workspace,
) -> None:
    """A dump every other episode: the rule still notes every episode's average."""
    episodes = run(workspace, workers=1, threshold=1.82, dump="{every: 2, keep: 1}")[0]
    assert 3 < len(episodes) < 12
    assert first_reached(episodes, 3, 1.82) == len(episodes)


def test_an_unreached_rule_leaves_the_phase_its_episodes(workspace: Workspace) -> None:
    episodes = run(workspace, workers=1, threshold=5.0)[0]
    assert len(episodes) == 12
    assert first_reached(episodes, 3, 5.0) is None


def test_with_two_workers_the_phase_ends_for_both(workspace: Workspace) -> None:
    """Every objective is above 1.2 (the Muscle pushes at least 0.25, alive gives 1): the
    rule holds for the first worker to end its third episode; the other ends its running
    episode and runs no further one (palaestrAI's shared end of the phase)."""
    episodes = run(workspace, workers=2, threshold=1.2)
    assert sorted(episodes) == [0, 1]
    assert all(objective > 1.2 for rows in episodes.values() for r in rows for objective in r)
    counts = sorted(len(episodes[w]) for w in (0, 1))
    assert counts[1] == 3 and 1 <= counts[0] <= 3, counts
