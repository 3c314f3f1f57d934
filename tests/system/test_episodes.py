"""How episodes end and what is kept of them: ``terminated``/``truncated`` from the environment
to every layer, the ``episodes`` table, the executor's ``on_episode`` callback, the phase's
``record`` setting and an agent's periodic brain dumps."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from palaestra.store import query, rows
from tests.conftest import Workspace
from tests.plugins.episode_ends import CODES

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: ends-run
experiment_uid: ends-tests
seed: 3
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: {environment}
            uid: world
            params: {params}
      agents:
        - name: one
          brain: {{name: episode_ends:EndsBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: episode_ends:EndsObjective, params: {{}}}}
          sensors: [{sensor}]
          actuators: [{actuator}]{agent_extra}
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
        params: {{driver: {driver}}}
      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}{phase_extra}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
ENDS = "episode_ends:EndsEnvironment"
DUMMY = "palaestra.environment.dummy_environment:DummyEnvironment"


def run_file(
    ws: Workspace,
    *,
    environment: str = ENDS,
    params: str = "{terminate_at: 3, truncate_at: 5}",
    driver: str = "auto",
    workers: int = 2,
    episodes: int = 2,
    phase_extra: str = "",
    agent_extra: str = "",
    name: str = "run.yml",
) -> Path:
    ends = environment == ENDS
    path = ws.path / name
    path.write_text(
        RUN.format(
            environment=environment,
            params=params if ends else "{max_iter: 4}",
            sensor="world.s" if ends else "world.0",
            actuator="world.a" if ends else "world.0",
            driver=driver,
            workers=workers,
            episodes=episodes,
            phase_extra=phase_extra,
            agent_extra=agent_extra,
        )
    )
    return path


def start(ws: Workspace, path: Path) -> None:
    result = ws.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]


def by_episode(found: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    grouped: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for row in found:
        grouped[(row["worker"], row["episode"])].append(row)
    return grouped


def expected_ends(episode: int) -> tuple[bool, bool]:
    """EndsEnvironment terminates its even episodes and truncates its odd ones."""
    return (episode % 2 == 0, episode % 2 == 1)


@pytest.mark.parametrize("driver", ["controller", "environment"])
def test_terminated_and_truncated_reach_every_layer(workspace: Workspace, driver: str) -> None:
    start(workspace, run_file(workspace, driver=driver))
    store = workspace.store_uri
    worlds = by_episode(rows.world_states("ends-run", store_uri=store))
    actions = by_episode(rows.muscle_actions("ends-run", store_uri=store))
    brain = by_episode(rows.statistics("ends-run", source="brain", store_uri=store))
    assert sorted(worlds) == sorted(actions) == [(w, e) for w in (0, 1) for e in (0, 1)]
    for (worker, episode), world in worlds.items():
        ends = expected_ends(episode)
        *before, last = world
        assert (last["done"], last["terminated"], last["truncated"]) == (True, *ends)
        assert all((r["terminated"], r["truncated"]) == (False, False) for r in before)
        *before_actions, last_action = actions[(worker, episode)]
        assert (last_action["terminated"], last_action["truncated"]) == ends
        assert all((r["terminated"], r["truncated"]) == (False, False) for r in before_actions)
        # the Muscle's memory (its Objective reads it) and the Brain's memory say the same
        assert last_action["objective"] == CODES[ends]
        assert {r["objective"] for r in before_actions} == {CODES[(False, False)]}
        *_, at_end = brain[(worker, episode)]
        assert at_end["step"] == last_action["step"] + 1
        assert at_end["statistics"] == {"ends": CODES[ends], "muscle_ends": CODES[ends]}
    episodes = rows.episodes("ends-run", store_uri=store)
    assert [(r["terminated"], r["truncated"]) for r in episodes] == [
        expected_ends(r["episode"]) for r in episodes
    ]


def test_an_environment_that_says_only_done_leaves_both_none(workspace: Workspace) -> None:
    start(workspace, run_file(workspace, environment=DUMMY, workers=1))
    store = workspace.store_uri
    found = [
        *rows.world_states("ends-run", store_uri=store),
        *rows.muscle_actions("ends-run", store_uri=store),
        *rows.episodes("ends-run", store_uri=store),
    ]
    assert found and {(r["terminated"], r["truncated"]) for r in found} == {(None, None)}
    objectives = {r["objective"] for r in rows.muscle_actions("ends-run", store_uri=store)}
    assert objectives == {CODES[(None, None)]}


@pytest.mark.parametrize("driver", ["controller", "environment"])
def test_episode_rows_agree_with_the_muscle_actions(workspace: Workspace, driver: str) -> None:
    path = run_file(
        workspace, driver=driver, episodes=3, params="{terminate_at: 30, truncate_at: 40}"
    )
    start(workspace, path)
    store = workspace.store_uri
    episodes = query.episodes("ends-run", store_uri=store)
    assert list(episodes["started_at"]) == sorted(episodes["started_at"])
    assert (episodes["started_at"] <= episodes["ended_at"]).all()
    actions = by_episode(rows.muscle_actions("ends-run", store_uri=store))
    worlds = by_episode(rows.world_states("ends-run", store_uri=store))
    assert len(episodes) == len(actions) == 6
    for row in episodes.to_dict("records"):
        key = (row["worker"], row["episode"])
        assert row["rewards"] == {"one": sum(r["reward"] for r in actions[key])}
        assert row["steps"] == len(worlds[key]) == len(actions[key])
    # the workers ran side by side: an episode of one began before one of the other ended
    first = {w: episodes[episodes["worker"] == w] for w in (0, 1)}
    assert first[0]["started_at"].min() < first[1]["ended_at"].max()
    assert first[1]["started_at"].min() < first[0]["ended_at"].max()
    assert list(query.episodes("ends-run", worker=1, store_uri=store)["worker"]) == [1, 1, 1]


CALLBACK = """
import json, sys
from palaestra.experiment.executor import execute
from palaestra.experiment.runfile import load_run_file
from palaestra.experiment.runtime_config import RuntimeConfig

seen = []
def on_episode(message):
    seen.append([message.phase, message.worker, message.episode, message.steps,
                 message.terminated, message.truncated, message.rewards])
    if len(seen) == 2:
        raise RuntimeError("a broken display must not fail the run")

outcome = execute(load_run_file(sys.argv[1]), RuntimeConfig(store_uri=sys.argv[2]),
                  on_episode=on_episode)
print(json.dumps({"exit": outcome.exit_code, "seen": seen}))
"""


def test_on_episode_sees_every_episode_once(workspace: Workspace) -> None:
    path = run_file(workspace, episodes=3)
    two_phases = path.read_text().replace(
        "run_config:", "  - phase_1:\n      phase_config: {mode: test, episodes: 2}\nrun_config:"
    )
    path.write_text(two_phases)
    result = subprocess.run(
        [sys.executable, "-c", CALLBACK, str(path), workspace.store_uri],
        cwd=workspace.path,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    told = json.loads(result.stdout.strip().splitlines()[-1])
    assert told["exit"] == 0
    assert "on_episode failed for phase" in result.stderr  # logged, not fatal
    seen = [tuple(s[:3]) for s in told["seen"]]
    stored = rows.episodes("ends-run", store_uri=workspace.store_uri)
    assert sorted(seen) == sorted((r["phase"], r["worker"], r["episode"]) for r in stored)
    assert len(set(seen)) == len(seen) == 2 * 3 + 2 * 2
    by_key = {tuple(s[:3]): s[3:] for s in told["seen"]}
    for row in stored:
        key = (row["phase"], row["worker"], row["episode"])
        assert by_key[key] == [
            row["steps"],
            row["terminated"],
            row["truncated"],
            row["rewards"],
        ]


RECORD_ALL_EVERY_EPISODES = ["", ", record: all", ", record: {every: 2}", ", record: episodes"]


@pytest.mark.slow
def test_record_keeps_the_rows_it_names(workspace: Workspace) -> None:
    """``all`` keeps every step; ``{every: 2}`` the steps 0, 2, 4, ... of each episode and its
    last; ``episodes`` no step at all. Every one keeps the episodes, their rewards and the
    statistics."""
    params = "{terminate_at: 5, truncate_at: 8}"
    found: dict[str, dict[str, Any]] = {}
    for i, record in enumerate(RECORD_ALL_EVERY_EPISODES):
        run = workspace.path / f"record-{i}"
        run.mkdir()
        ws = Workspace(run, workspace.sessions)
        start(ws, run_file(ws, params=params, phase_extra=record))
        store = ws.store_uri
        found[record] = {
            "world": rows.world_states("ends-run", store_uri=store),
            "actions": rows.muscle_actions("ends-run", store_uri=store),
            "episodes": rows.episodes("ends-run", store_uri=store),
            "rewards": rows.episode_rewards("ends-run", store_uri=store),
            "statistics": rows.statistics("ends-run", store_uri=store),
        }
    every = found[""]
    assert found[", record: all"]["world"] == every["world"]
    assert found[", record: all"]["actions"] == every["actions"]

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return (row["worker"], row["episode"], row["step"])

    second = found[", record: {every: 2}"]
    assert list(map(key, second["world"])) == [
        key(r) for r in every["world"] if (r["step"] - 1) % 2 == 0 or r["done"]
    ]
    assert list(map(key, second["actions"])) == [
        key(r) for r in every["actions"] if r["step"] % 2 == 0 or r["done"]
    ]
    assert len(second["actions"]) < len(every["actions"])
    only = found[", record: episodes"]
    assert only["world"] == only["actions"] == []
    assert only["statistics"] and len(only["statistics"]) == len(every["statistics"])
    for record, kept in found.items():
        assert sorted(map(_ends, kept["episodes"])) == sorted(map(_ends, every["episodes"]))
        got = [(r["agent"], r["worker"], r["episode"], r["reward"]) for r in kept["rewards"]]
        want = [(r["agent"], r["worker"], r["episode"], r["reward"]) for r in every["rewards"]]
        assert got == want, record
    assert all(r["objective"] is None for r in only["rewards"])


def _ends(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["worker"], row["episode"], row["steps"], row["terminated"], row["truncated"])


def test_periodic_dumps_keep_the_newest_and_the_final(workspace: Workspace) -> None:
    """``dump: {every: 2, keep: 2}``: after episodes 2, 4, 6 and 8 of 9 (over both workers),
    the store keeps the dumps after 6 and 8, and the final one."""
    dump = "\n          dump: {every: 2, keep: 2}"
    path = run_file(workspace, environment=DUMMY, episodes=5, agent_extra=dump)
    text = path.read_text().replace("episode_ends:EndsBrain", "palaestra.agent:DummyBrain")
    path.write_text(text.replace("worker: 2", "worker: 1").replace("episodes: 5", "episodes: 9"))
    start(workspace, path)
    kept = rows.brain_states("ends-run", with_dump=True, store_uri=workspace.store_uri)
    calls = [json.loads(r["dump"])["thinking_calls"] for r in kept]
    steps = 4 + 1  # DummyEnvironment's max_iter 4: thinking on 4 actions and the end
    assert calls == [6 * steps, 8 * steps, 9 * steps]
    assert len(kept) == 2 + 1


def test_a_bad_record_exits_2_naming_the_key(workspace: Workspace) -> None:
    result = workspace.run("experiment-start", str(run_file(workspace, phase_extra=", record: 0")))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "phase_config.record" in result.stderr


TWO_WORLDS = """\
uid: two-worlds
experiment_uid: ends-tests
seed: 3
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: long
            params: {max_iter: 7}
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: short
            params: {max_iter: 5}
      agents:
        - name: one
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [long.0, short.0]
          actuators: [long.0, short.0]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config:
        {mode: train, worker: 1, episodes: 3, envs_per_worker: GAMES, record: {every: 3}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


@pytest.mark.parametrize("games", [1, 2])
def test_record_every_keeps_each_environments_row_of_an_episodes_last_step(
    workspace: Workspace, games: int
) -> None:
    """``short`` ends each episode at its step 5, ``long`` goes on: ``{every: 3}`` keeps the
    steps 1 and 4 of both and step 5, the episode's last, of both too (also of the phase's
    last episode, which no reset follows)."""
    path = workspace.path / "two.yml"
    path.write_text(TWO_WORLDS.replace("GAMES", str(games)))
    start(workspace, path)
    store = workspace.store_uri
    episodes = rows.episodes("two-worlds", store_uri=store)
    assert len(episodes) == 3 * games and {e["steps"] for e in episodes} == {5}
    kept: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for row in rows.world_states("two-worlds", store_uri=store):
        kept[row["environment"]].append((row["worker"], row["episode"], row["step"]))
    want = sorted((e["worker"], e["episode"], step) for e in episodes for step in (1, 4, 5))
    assert sorted(kept["short"]) == want
    assert sorted(kept["long"]) == want
