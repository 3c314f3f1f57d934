"""Several games per worker (``phase_config.envs_per_worker``): each game is a lane of the store
that matches a worker of its own, the Muscle's batched hook is called once per round, an
unchanged plug-in works, failures in any game end the run, and what cannot be combined is
refused."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from palaestra.store import rows
from tests.conftest import Workspace, slow_after, wait_until_gone
from tests.plugins.games import WEIGHTS

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: games-run
experiment_uid: games-tests
seed: 11
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: {environment}
            uid: pole
            params: {params}
      agents:
        - name: player
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: {muscle}, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [pole.state]
          actuators: [pole.push]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}{extra}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
CARTPOLE = "palaestra.environment.cartpole:CartPole"
LINEAR = "games:LinearMuscle"


def run_file(
    ws: Workspace,
    *,
    workers: int,
    games: int,
    episodes: int = 2,
    environment: str = CARTPOLE,
    params: str = "{max_steps: 60}",
    muscle: str = LINEAR,
    extra: str = "",
    name: str = "run.yml",
) -> Path:
    path = ws.path / name
    path.write_text(
        RUN.format(
            environment=environment,
            params=params,
            muscle=muscle,
            workers=workers,
            episodes=episodes,
            extra=f", envs_per_worker: {games}{extra}",
        )
    )
    return path


def start(ws: Workspace, path: Path) -> None:
    result = ws.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]


def stored(store: str) -> tuple[dict[int, list[tuple[Any, ...]]], ...]:
    """The run's ``world_states`` and ``muscle_actions`` rows by lane (:func:`lanes` of
    :data:`WORLD` and :data:`ACTIONS`)."""
    return (
        lanes(rows.world_states("games-run", store_uri=store), *WORLD),
        lanes(rows.muscle_actions("games-run", store_uri=store), *ACTIONS),
    )


def lanes(found: list[dict[str, Any]], *keys: str) -> dict[int, list[tuple[Any, ...]]]:
    """The rows of each worker (lane) in the order the store holds them, as tuples of
    ``keys``."""
    by_lane: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in found:
        by_lane[row["worker"]].append(tuple(row[k] for k in keys))
    return dict(by_lane)


WORLD = ("episode", "step", "sensors", "setpoints", "rewards", "done", "terminated", "truncated")
ACTIONS = (
    "episode",
    "step",
    "sensor_readings",
    "actuator_setpoints",
    "rewards",
    "objective",
    "done",
    "terminated",
    "truncated",
)


@pytest.mark.parametrize("lag", slow_after(["async", 0, 1]))  # (lag 0: the two environments)
def test_four_games_per_worker_match_four_workers_of_one_game(
    tmp_path: Path, lag: int | str
) -> None:
    """One worker with 4 games writes, lane by lane, what 4 workers of one game write (each
    game's seed is the seed of the worker with its lane's number); the batched hook is called
    once per round with every game that goes on; ``episodes`` counts per game. With
    ``update_lag`` 1 the Muscle acts before it completes the round's transitions; with
    ``async`` it sends each round's experience without waiting for the Brain, and every row
    says whether it acted on a stale policy."""
    results = {}
    for games, workers in ((4, 1), (1, 4)):
        ws = Workspace(tmp_path / f"games{games}")
        ws.path.mkdir()
        start(ws, run_file(ws, workers=workers, games=games, extra=f", update_lag: {lag}"))
        store = ws.store_uri
        results[games] = (
            rows.world_states("games-run", store_uri=store),
            rows.muscle_actions("games-run", store_uri=store),
            rows.episodes("games-run", store_uri=store),
            rows.plugin_records("games-run", store_uri=store),
            ws.store,
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    worlds, actions, episodes, records, db = results[4]
    single_worlds, single_actions, single_episodes, _, _ = results[1]
    assert worlds and actions
    world_lanes = lanes(worlds, *WORLD)
    assert sorted(world_lanes) == [0, 1, 2, 3]
    assert world_lanes == lanes(single_worlds, *WORLD)
    assert lanes(actions, *ACTIONS) == lanes(single_actions, *ACTIONS)
    # each lane's rows are contiguous episodes 0, 1 with steps 1.. (world) and 0.. (actions)
    for lane, found in world_lanes.items():
        for episode in (0, 1):
            steps = [r[1] for r in found if r[0] == episode]
            assert steps == list(range(1, len(steps) + 1)), (lane, episode)
            assert [r[5] for r in found if r[0] == episode][-1] is True
    # episodes: 2 per game, the same steps and rewards as the single-game workers'
    keyed = sorted((r["worker"], r["episode"], r["steps"], r["rewards"]) for r in episodes)
    assert keyed == sorted(
        (r["worker"], r["episode"], r["steps"], r["rewards"]) for r in single_episodes
    )
    assert len(keyed) == 4 * 2
    with sqlite3.connect(db) as conn:
        assert conn.execute("select workers, episodes from experiment_run_phases").fetchall() == [
            (4, 2)
        ]
    # one batched call per round: a round steps every game that still plays
    total = Counter({lane: len(found) for lane, found in world_lanes.items()})
    sizes = [r["value"] for r in records if r["key"] == "games"]
    assert len(sizes) == max(total.values())
    assert sizes == [sum(1 for t in total.values() if t > k) for k in range(len(sizes))]
    assert sizes[0] == 4
    stale = {r["stale_policy"] for r in actions}
    assert stale <= {True, False} if lag == "async" else stale == {None}


@pytest.mark.slow
def test_games_played_in_two_overlapping_groups_do_what_one_group_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 games of one worker play in two groups of 4 whose rounds overlap (``round_groups:
    2``): lane by lane the rows of 2 workers of 4 games (one group each); the batched hook is
    called for each group in turn."""
    monkeypatch.setenv("PALAESTRA_ROUND_GROUPS", "2")  # (whatever the CPUs)
    found = {}
    for games, workers in ((8, 1), (4, 2)):
        ws = Workspace(tmp_path / f"games{games}")
        ws.path.mkdir()
        start(ws, run_file(ws, workers=workers, games=games, params="{max_steps: 30}"))
        store = ws.store_uri
        found[games] = (
            lanes(rows.world_states("games-run", store_uri=store), *WORLD),
            lanes(rows.muscle_actions("games-run", store_uri=store), *ACTIONS),
            rows.plugin_records("games-run", store_uri=store),
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    worlds, actions, records = found[8]
    assert sorted(worlds) == list(range(8))
    assert (worlds, actions) == found[4][:2]
    sizes = [r["value"] for r in records if r["key"] == "games"]
    assert sizes[:6] == [4] * 6
    groups = (range(4), range(4, 8))
    assert len(sizes) == sum(max(len(worlds[lane]) for lane in group) for group in groups)


SECOND_AGENT = """\
        - name: second
          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: games:LinearMuscle, params: {weights: [0.0, 0.5, 1.0, -0.5]}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [pole.state]
          actuators: [pole.push]
      simulation:
        name: palaestra.simulation:TakingTurns
"""


@pytest.mark.slow  # (in one process for every order of turns: tests/unit/test_rounds.py)
@pytest.mark.parametrize("policy", ["TakingTurns", "BothEveryThird"])
def test_taking_turns_in_four_games_match_four_workers_of_one_game(
    tmp_path: Path, policy: str
) -> None:
    """Two agents taking turns (and a custom order of turns, in which an agent may act in
    some games of a round and not in others) in 4 games of one worker write, lane by lane and
    agent by agent, what 4 workers of one game write."""
    simulation = (
        "palaestra.simulation:TakingTurns" if policy == "TakingTurns" else "games:BothEveryThird"
    )
    results = {}
    for games, workers in ((4, 1), (1, 4)):
        ws = Workspace(tmp_path / f"games{games}")
        ws.path.mkdir()
        path = run_file(ws, workers=workers, games=games, params="{max_steps: 25}")
        text = path.read_text()
        old = "      simulation:\n        name: palaestra.simulation:Vanilla\n"
        assert old in text
        path.write_text(
            text.replace(old, SECOND_AGENT.replace("palaestra.simulation:TakingTurns", simulation))
        )
        start(ws, path)
        store = ws.store_uri
        results[games] = (
            lanes(rows.world_states("games-run", store_uri=store), *WORLD),
            lanes(rows.muscle_actions("games-run", store_uri=store), "agent", *ACTIONS),
            sorted(
                (r["worker"], r["episode"], r["steps"], r["rewards"])
                for r in rows.episodes("games-run", store_uri=store)
            ),
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    worlds, actions, episodes = results[4]
    assert sorted(worlds) == [0, 1, 2, 3]
    assert len(episodes) == 4 * 2
    assert {row[0] for found in actions.values() for row in found} == {"player", "second"}
    assert (worlds, actions, episodes) == results[1]


@pytest.mark.slow  # (evaluations of one game: tests/system/test_evaluation_condition.py)
def test_evaluation_rollouts_in_games_match_workers_of_one_game(tmp_path: Path) -> None:
    """With ``evaluate_every: 2`` (one worker, as evaluations need) every game plays an
    evaluation rollout (the Muscle in test mode) after each 2 of its episodes, numbered in its
    sequence; the first game writes what the worker's one game writes alone, and the Brain
    judges each evaluation once."""
    results = {}
    for games, workers in ((3, 1), (1, 1)):
        ws = Workspace(tmp_path / f"games{games}")
        ws.path.mkdir()
        log = ws.path / "evaluations.txt"
        path = run_file(
            ws,
            workers=workers,
            games=games,
            episodes=4,
            params="{max_steps: 20}",
            muscle="games:ModalMuscle",
            extra=", evaluate_every: 2",
        )
        text = path.read_text().replace(
            "palaestra.agent.dummy_brain:DummyBrain, params: {}",
            f'evaluation_plugins:EvaluatingBrain, params: {{log: "{log}"}}',
        )
        path.write_text(text)
        start(ws, path)
        store = ws.store_uri
        results[games] = (
            *stored(store),
            sorted(
                (r["worker"], r["episode"], r["steps"], r["rewards"])
                for r in rows.episodes("games-run", store_uri=store)
            ),
            [json.loads(line)["episode"] for line in log.read_text().splitlines()],
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    worlds, actions, episodes, evaluations = results[3]
    alone_worlds, alone_actions, alone_episodes, alone_evaluations = results[1]
    assert worlds[0] == alone_worlds[0] and actions[0] == alone_actions[0]
    assert [row for row in episodes if row[0] == 0] == alone_episodes
    # 4 training episodes and 2 rollouts per game, numbered 0, 1, (2), 3, 4, (5)
    assert sorted({(worker, episode) for worker, episode, _, _ in episodes}) == [
        (lane, episode) for lane in range(3) for episode in range(6)
    ]
    for found in actions.values():  # the rollouts pushed the other way (test mode)
        for episode, _, sensors, setpoints, *_ in found:
            state = sensors["pole.state"]
            linear = int(sum(w * x for w, x in zip(WEIGHTS, state, strict=True)) > 0)
            assert setpoints["pole.push"] == (1 - linear if episode in (2, 5) else linear)
    assert evaluations == alone_evaluations == [0, 1]  # each evaluation judged once


def test_an_unchanged_muscle_plays_several_games(workspace: Workspace) -> None:
    """DummyMuscle knows nothing of batches: the default hook loops over its
    ``propose_actions``; every game plays its episodes with its own seed (and the Brain's
    answer to a round is applied before the next, ``update_lag: 1``)."""
    start(
        workspace,
        run_file(
            workspace,
            workers=2,
            games=3,
            episodes=2,
            muscle="palaestra.agent.dummy_muscle:DummyMuscle",
            params="{max_steps: 20}",
            extra=", update_lag: 1",
        ),
    )
    store = workspace.store_uri
    actions = lanes(rows.muscle_actions("games-run", store_uri=store), "episode", "step")
    assert sorted(actions) == list(range(6))
    episodes = rows.episodes("games-run", store_uri=store)
    assert sorted((r["worker"], r["episode"]) for r in episodes) == [
        (lane, episode) for lane in range(6) for episode in (0, 1)
    ]
    for lane, found in actions.items():
        steps = {(r["worker"], r["episode"]): r["steps"] for r in episodes}
        assert len(found) == steps[(lane, 0)] + steps[(lane, 1)]
    starts = {
        tuple(r["sensor_readings"]["pole.state"])
        for r in rows.muscle_actions("games-run", store_uri=store)
        if r["step"] == 0
    }
    assert len(starts) == 12  # every game's every episode starts from its own state


def test_a_muscle_written_for_one_game_keeps_its_statistics_per_game(
    workspace: Workspace,
) -> None:
    """A Muscle without a batched hook that adds a statistic (and records a value) in every
    ``propose_actions`` call is called once per game: each game's step has its own row, with
    the state that game observed."""
    start(
        workspace,
        run_file(workspace, workers=1, games=3, episodes=1, muscle="games:CountingMuscle"),
    )
    store = workspace.store_uri
    actions = rows.muscle_actions("games-run", store_uri=store)
    observed = {
        (r["worker"], r["episode"], r["step"]): r["sensor_readings"]["pole.state"] for r in actions
    }
    statistics = rows.statistics("games-run", store_uri=store)
    assert {r["worker"] for r in statistics} == {0, 1, 2}
    by_step = {
        (r["worker"], r["episode"], r["step"]): r["statistics"]["state"] for r in statistics
    }
    assert len(by_step) == len(statistics)  # one row per game and step
    assert by_step.keys() == observed.keys()  # every step a game acted on, once
    for key, state in by_step.items():
        assert state == pytest.approx(observed[key])
    records = rows.plugin_records("games-run", store_uri=store)
    assert Counter(r["worker"] for r in records) == Counter(k[0] for k in by_step)


def test_a_failing_game_fails_the_run(workspace: Workspace) -> None:
    result = workspace.run(
        "experiment-start",
        str(
            run_file(
                workspace,
                workers=1,
                games=4,
                environment="games:FailingCartPole",
                params="{fail_game: 2}",
            )
        ),
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "game 2 broke" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "FailingCartPole" in reason and "update" in reason


def test_games_stepped_in_one_call_write_what_games_stepped_one_by_one_write(
    tmp_path: Path,
) -> None:
    """CartPole steps the games of a round in one call (``update_batch``): lane by lane the
    rows, observations and episodes are those of the same games stepped one by one with
    ``update`` (a subclass that overrides only ``update``), in two overlapping groups."""
    found = {}
    for environment in (CARTPOLE, "games:PerGameCartPole"):
        ws = Workspace(tmp_path / environment.replace(":", "_"))
        ws.path.mkdir()
        path = run_file(ws, workers=1, games=8, environment=environment, params="{max_steps: 40}")
        start(ws, path)
        store = ws.store_uri
        found[environment] = (
            *stored(store),
            sorted(
                (r["worker"], r["episode"], r["steps"], r["terminated"], r["rewards"])
                for r in rows.episodes("games-run", store_uri=store)
            ),
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    batched = found[CARTPOLE]
    assert sorted(batched[0]) == list(range(8))
    assert len(batched[2]) == 8 * 2
    assert batched == found["games:PerGameCartPole"]


def test_a_brain_with_thinking_batch_thinks_about_a_round_in_one_call(tmp_path: Path) -> None:
    """A Brain that overrides ``thinking_batch`` gets a round's experiences (one per game, in
    lane order) in one call; the rows and the Brain's last dump are those of thinking game
    by game."""
    found = {}
    for brain in ("palaestra.agent.dummy_brain:DummyBrain", "games:RoundBrain"):
        ws = Workspace(tmp_path / brain.replace(":", "_"))
        ws.path.mkdir()
        path = run_file(ws, workers=1, games=4)
        text = path.read_text()
        path.write_text(text.replace("palaestra.agent.dummy_brain:DummyBrain", brain))
        start(ws, path)
        store = ws.store_uri
        with sqlite3.connect(ws.store) as conn:
            dumps = [json.loads(d) for (d,) in conn.execute("select dump from brain_states")]
            stats = [
                json.loads(values)
                for (values,) in conn.execute(
                    "select statistics from statistics where source = 'brain'"
                )
            ]
        found[brain] = (
            lanes(rows.world_states("games-run", store_uri=store), *WORLD),
            lanes(rows.muscle_actions("games-run", store_uri=store), *ACTIONS),
            dumps,
        )
        assert not wait_until_gone(ws.sessions), "processes survived the run"
    batches = [s for s in stats if "batch" in s]
    assert batches, stats
    # a round of the 4 games is one call, of 4 experiences (a game's episode ends in one
    # round, its next begins in the following), from the 4 games, in lane order
    assert {s["batch"] for s in batches} == {4}, batches
    assert {(s["games"], s["ordered"]) for s in batches} == {(4, 1)}, batches
    batched, one_by_one = (
        found["games:RoundBrain"],
        found["palaestra.agent.dummy_brain:DummyBrain"],
    )
    assert batched[:2] == one_by_one[:2]
    # a dump at a game's episode end holds what the Brain learned from the whole call (the
    # round), not only up to that game's experience: the same dumps, the last the same
    assert len(batched[2]) == len(one_by_one[2]) == 8
    assert batched[2][-1] == one_by_one[2][-1]
    assert batched[2][-1]["thinking_calls"] > 4 * 60


def test_games_stepped_in_one_call_play_without_a_store(workspace: Workspace) -> None:
    config = workspace.path / "runtime.yaml"
    config.write_text("store_uri: none\n")
    path = run_file(workspace, workers=1, games=4)
    result = workspace.run("-c", str(config), "experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ended: 8/8 episodes" in result.stdout + result.stderr


def test_a_batch_value_outside_its_space_names_the_game(workspace: Workspace) -> None:
    path = run_file(
        workspace,
        workers=1,
        games=4,
        environment="games:StrayCartPole",
        params="{stray_game: 2}",
    )
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "for game 2 (row 2 of the batch)" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "StrayCartPole" in reason and "update_batch" in reason


def test_a_failing_batched_muscle_fails_the_run(workspace: Workspace) -> None:
    path = run_file(workspace, workers=2, games=3, muscle="games:FailingMuscle")
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "the model broke" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "propose_actions_batch" in reason


DRIVER = "        params: {driver: controller}\n        conditions:"
TWO_ENVIRONMENTS = (
    "      agents:",
    """        - environment:
            name: palaestra.environment.cartpole:CartPole
            uid: other
            params: {max_steps: 45}
      agents:
        - name: second
          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}
          muscle: {name: games:LinearMuscle, params: {}}
          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: {}}
          sensors: [other.state, pole.state]
          actuators: [other.push]""",
)


def played(tmp_path: Path, name: str, edits: list[tuple[str, str]], **run: Any) -> Any:
    """Start the run file of ``run`` with ``edits``; its rows by lane and its episodes."""
    ws = Workspace(tmp_path / name)
    ws.path.mkdir()
    path = run_file(ws, **run)
    text = path.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    path.write_text(text)
    start(ws, path)
    assert not wait_until_gone(ws.sessions), "processes survived the run"
    store = ws.store_uri
    by_lane = lanes(rows.world_states("games-run", store_uri=store), "environment", *WORLD)
    actions = rows.muscle_actions("games-run", store_uri=store)
    by_agent = lanes(actions, "agent", *ACTIONS)
    episodes = sorted(
        (r["worker"], r["episode"], r["steps"], r["rewards"])
        for r in rows.episodes("games-run", store_uri=store)
    )
    return by_lane, by_agent, episodes


def test_games_the_controller_drives_match_games_the_environment_drives(tmp_path: Path) -> None:
    """``driver: controller`` with 4 games: the simulation controller plays the rounds and
    asks the environment to step them; lane by lane the rows of the rounds the environment
    plays itself."""
    drives = played(tmp_path, "controller", [("        conditions:", DRIVER)], workers=1, games=4)
    assert drives[0] and sorted(drives[0]) == [0, 1, 2, 3]
    assert drives == played(tmp_path, "environment", [], workers=1, games=4)


@pytest.mark.parametrize("lag", slow_after([0, "async"]))
def test_two_environments_in_four_games_match_four_workers_of_one_game(
    tmp_path: Path, lag: int | str
) -> None:
    """A phase with two environments and two agents (each acting on its own, one reading
    both): with 4 games per worker, lane by lane, environment by environment and agent by agent
    the rows of 4 workers of one game each (which the controller drives step by step)."""
    extra = f", update_lag: {lag}"
    games = played(tmp_path, "games", [TWO_ENVIRONMENTS], workers=1, games=4, extra=extra)
    workers = played(tmp_path, "workers", [TWO_ENVIRONMENTS], workers=4, games=1, extra=extra)
    world, actions, episodes = games
    assert sorted(world) == [0, 1, 2, 3]
    assert {row[0] for rows_of in world.values() for row in rows_of} == {"pole", "other"}
    assert {row[0] for rows_of in actions.values() for row in rows_of} == {"player", "second"}
    assert len(episodes) == 4 * 2
    assert games == workers


def test_an_agents_phase_rule_ends_every_game(workspace: Workspace) -> None:
    """palaestrAI's ``phase_avgN`` holds for the first game to end its third episode (as for a
    worker of one game); the Muscle hears it with the Brain's answer to the round that reported
    the end, before a game begins its next episode: each game finishes the episode it plays and
    begins no other."""
    from tests.system.test_palaestrai_phase_objective import RUN_FILE

    path = workspace.path / "phase_objective.yml"
    text = RUN_FILE.replace("WORKERS", "1").replace("THRESHOLD", "1.2")
    text = text.replace("episodes: 12}", "episodes: 12, envs_per_worker: 2}")
    path.write_text(text)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        counts = dict(conn.execute("select worker, count(*) from episodes group by worker"))
    assert counts == {0: 3, 1: 3}


def test_an_agents_objective_rule_ends_each_games_own_episode(workspace: Workspace) -> None:
    """The objective rule of the built-ins' test (``brain_avg2: 3.5``) applied to each game on
    its own values: every game ends its episodes where a worker of one game ends them."""
    from tests.system.test_builtins_run import OBJECTIVE_RUN

    path = workspace.path / "run.yml"
    text = OBJECTIVE_RUN.replace("episodes: 2}", "episodes: 2, envs_per_worker: 3}")
    path.write_text(text)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        world = conn.execute("select worker, episode, step, done from world_states order by id")
        by_lane = lanes(
            [dict(zip(("worker", "episode", "step", "done"), r, strict=True)) for r in world],
            "episode",
            "step",
            "done",
        )
    single = [(0, step, step == 5) for step in range(1, 6)] + [(1, 1, True)]
    assert by_lane == {lane: single for lane in range(3)}
