"""Offline learning (``replay:``), with real runs: a Q-learner pre-trained on a recorded expert
starts its phase at the expert's level; without ``replay`` it does not; bad sources exit 2."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import msgspec
import pytest

from palaestra.core.wire import messages as m
from palaestra.store import rows
from palaestra.store.engine import make_engine
from palaestra.store.replay_source import find_replay
from tests.conftest import Workspace

EXPERT = """
        - name: expert
          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: offline_chain:ExpertMuscle, params: {}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [chain.position]
          actuators: [chain.move]
"""
LEARNER = """
        - name: learner
          brain: {name: offline_chain:QBrain, params: {}}
          muscle: {name: offline_chain:GreedyMuscle, params: {}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [chain.position]
          actuators: [chain.move]
"""


def run_file(
    workers: int, replay: str = "", uid: str = "offline-chain", expert: bool = True
) -> str:
    """An expert phase (unless ``expert`` is false), then a learner phase with ``replay``."""
    environment = """
      environments:
        - environment: {name: offline_chain:ChainEnvironment, uid: chain, params: {length: 6}}
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - {name: palaestra.simulation:VanillaSimControllerTerminationCondition, params: {}}
"""
    phases = []
    if expert:
        phases.append(
            f"""  - expert:{environment}      agents:{EXPERT}      phase_config:
        {{mode: train, worker: {workers}, episodes: 2}}
"""
        )
    learner = LEARNER + (f"          replay: {replay}\n" if replay else "")
    phases.append(
        f"""  - learner:{"" if expert else environment}
      agents:{learner}      phase_config:
        {{mode: train, worker: {workers}, episodes: 2}}
"""
    )
    return f'uid: {uid}\nseed: 3\nversion: "0.1"\nschedule:\n' + "".join(phases)


def episode_rewards(workspace: Workspace, run: str, agent: str) -> dict[tuple[int, int], float]:
    """The reward each (worker, episode) of ``agent`` earned, from the store."""
    found: dict[tuple[int, int], float] = defaultdict(float)
    for row in rows.muscle_actions(run, agent=agent, store_uri=workspace.store_uri):
        found[(row["worker"], row["episode"])] += row["reward"]
    return dict(found)


def start(workspace: Workspace, text: str, name: str = "run.yml") -> tuple[Path, object]:
    path = workspace.path / name
    path.write_text(text)
    return path, workspace.run("experiment-start", str(path), timeout=90)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", [1, 2])
def test_pretrained_learner_starts_at_the_experts_level(
    workspace: Workspace, workers: int
) -> None:
    _, result = start(workspace, run_file(workers, "[{agent: expert}]"))
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    expert = episode_rewards(workspace, "offline-chain", "expert")
    learner = episode_rewards(workspace, "offline-chain", "learner")
    assert set(expert) == {(w, e) for w in range(workers) for e in range(2)}
    level = set(expert.values())
    assert level == {6.0}  # the expert earns the chain's length in every episode
    first = {w: learner[(w, 0)] for w in range(workers)}
    assert first == {w: 6.0 for w in range(workers)}, learner
    pretrained = rows.statistics("offline-chain", agent="learner", store_uri=workspace.store_uri)
    seen = [
        r["statistics"]["pretrained_rows"]
        for r in pretrained
        if "pretrained_rows" in r["statistics"]
    ]
    assert seen == [3 * 6 * 2 * workers]  # 3 sweeps over every recorded step of every worker
    engine = make_engine(workspace.store_uri)
    try:
        request = m.StoreFindReplay(run_uid="offline-chain", agent="expert", phase=0)
        found = find_replay(engine, request)
        checked = find_replay(engine, msgspec.structs.replace(request, first_episode=True))
    finally:
        engine.dispose()
    assert (found.problem, found.sensors, found.actuators) == (
        "",
        ["chain.position"],
        ["chain.move"],
    )
    assert [(s.worker, [(r.episode, r.step) for r in s.rows]) for s in found.steps] == [
        (w, [(e, t) for e in range(2) for t in range(6)]) for w in range(workers)
    ]
    assert [(s.worker, {r.episode for r in s.rows}) for s in checked.steps] == [
        (w, {0}) for w in range(workers)
    ]


@pytest.mark.timeout(120)
def test_without_replay_the_learner_starts_below_the_expert(workspace: Workspace) -> None:
    _, result = start(workspace, run_file(1))
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    learner = episode_rewards(workspace, "offline-chain", "learner")
    assert learner[(0, 0)] < 6.0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_replay_from_another_run_and_its_bad_sources(workspace: Workspace) -> None:
    _, result = start(workspace, run_file(1, uid="recorded"))
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    good = run_file(1, "[{experiment_run: recorded, agent: expert, phase: 0}]", "fresh", False)
    _, result = start(workspace, good, "fresh.yml")
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    assert episode_rewards(workspace, "fresh", "learner")[(0, 0)] == 6.0
    for source, said in (
        ("{experiment_run: nowhere, phase: 0}", "no run 'nowhere' in the store"),
        ("{experiment_run: recorded, phase: 0, agent: expert}", "lacks chain.steps"),
    ):
        text = run_file(1, f"[{source}]", "bad", False)
        if "lacks" in said:  # this learner sees a sensor the recorded expert did not
            text = text.replace("[chain.position]", "[chain.position, chain.steps]")
        path, result = start(workspace, text, "bad.yml")
        assert result.returncode == 2, result.stderr  # type: ignore[attr-defined]
        stderr = result.stderr  # type: ignore[attr-defined]
        assert str(path.name) in stderr and "replay[0]" in stderr and said in stderr, stderr
        stdout = result.stdout  # type: ignore[attr-defined]
        assert "Results are in the store" not in stdout, stdout  # (it has none of this run)
    # a source in another run is checked before the run starts: nothing of it is recorded
    assert "bad" not in {r["run_uid"] for r in rows.runs(store_uri=workspace.store_uri)}
    config = workspace.path / "nostore.yaml"
    config.write_text("store_uri: none\n")
    result = workspace.run(
        "-c", str(config), "experiment-start", str(workspace.path / "fresh.yml")
    )
    assert result.returncode == 2, result.stderr
    assert "fresh.yml" in result.stderr and "this run has no store" in result.stderr
    engine = make_engine(workspace.store_uri)
    try:
        for phase, agent, instance, said in (
            (
                5,
                "expert",
                None,
                "run 'recorded' has no phase 5; its phases: 0 (expert), 1 (learner)",
            ),
            (
                0,
                "nobody",
                None,
                "run 'recorded' has no agent 'nobody' in phase 0; its agents there: expert",
            ),
            (0, "expert", "x", "run 'recorded' has no instance 'x'; its instances: "),
        ):
            request = m.StoreFindReplay(
                run_uid="recorded", agent=agent, phase=phase, instance=instance
            )
            assert find_replay(engine, request).problem.startswith(said)
    finally:
        engine.dispose()
