"""``palaestra experiment-start`` on the example run files, checked against the store."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from palaestra.version import __version__
from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(120)


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def start(ws: Workspace, run_file: Path | str) -> None:
    result = ws.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr


PER_AGENT_STEPS = """
    select p."index", a.name, m.worker, m.episode, count(*), group_concat(m.step)
    from muscle_actions m join agents a on a.id = m.agent_id
    join experiment_run_phases p on p.id = a.experiment_run_phase_id
    group by 1, 2, 3, 4 order by 1, 2, 3, 4
"""

WORLD_STEPS = """
    select p."index", w.worker, w.episode, count(*), sum(w.done)
    from world_states w join environments e on e.id = w.environment_id
    join experiment_run_phases p on p.id = e.experiment_run_phase_id
    group by 1, 2, 3 order by 1, 2, 3
"""


def test_dummy_run_two_phases_two_agents(workspace: Workspace) -> None:
    start(workspace, EXPERIMENTS / "dummy_run.yml")
    db = workspace.store
    assert rows(db, "select status, reason from experiment_run_instances") == [("finished", "")]
    assert rows(db, 'select "index", mode, status from experiment_run_phases order by 1') == [
        (0, "train", "finished"),
        (1, "test", "finished"),
    ]
    # what it ran with (found while the writer starts)
    ((versions, revision),) = rows(
        db, "select package_versions, code_revision from experiment_run_instances"
    )
    assert json.loads(versions)["palaestra"] == __version__
    assert {"numpy", "pyzmq", "msgspec", "sqlalchemy"} <= set(json.loads(versions))
    head = subprocess.run(
        ["git", "-C", str(EXPERIMENTS), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    assert revision == (None if head.returncode else ANY)
    assert head.returncode or revision.split("+")[0] == head.stdout.strip()
    steps = ",".join(str(i) for i in range(10))
    assert rows(db, PER_AGENT_STEPS) == [
        (phase, agent, 0, 0, 10, steps) for phase in (0, 1) for agent in ("attacker", "defender")
    ]
    # one world state per environment step, the last one done
    assert rows(db, WORLD_STEPS) == [(0, 0, 0, 10, 1), (1, 0, 0, 10, 1)]
    sensors, setpoints = rows(
        db,
        "select sensor_readings, actuator_setpoints from muscle_actions "
        "join agents on agents.id = agent_id where name = 'attacker' "
        "limit 1",
    )[0]
    assert sorted(json.loads(sensors)) == [f"myenv.{i}" for i in range(5, 10)]
    assert all(0 <= v < 100 for v in json.loads(setpoints).values())


def test_phase_one_starts_from_the_dump_of_phase_zero(workspace: Workspace) -> None:
    start(workspace, EXPERIMENTS / "dummy_run.yml")
    db = workspace.store
    dumps = {
        (phase, name): (state_id, json.loads(dump))
        for phase, name, state_id, dump in rows(
            db,
            'select p."index", a.name, b.id, b.dump from brain_states b '
            "join agents a on a.id = b.agent_id "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id",
        )
    }
    for agent in ("attacker", "defender"):
        first_id, first = dumps[(0, agent)]
        _, second = dumps[(1, agent)]
        # phase 1's brain continued counting from phase 0's dump
        assert second["thinking_calls"] == 2 * first["thinking_calls"] == 22
        (loaded_from,) = rows(
            db,
            "select loaded_from from agents a join experiment_run_phases p "
            'on p.id = a.experiment_run_phase_id where p."index" = 1 and a.name = ?',
            agent,
        )[0]
        assert json.loads(loaded_from) == {
            "run": "dummy-run",
            "agent": agent,
            "phase": 0,
            "brain_state_id": first_id,
        }
    files = sorted(p.name for p in (workspace.path / "_outputs").rglob("*.bin"))
    assert files == ["attacker.bin", "attacker.bin", "defender.bin", "defender.bin"]


def test_taking_turns_alternates_agents(workspace: Workspace) -> None:
    start(workspace, EXPERIMENTS / "taking_turns_run.yml")
    db = workspace.store
    assert rows(db, PER_AGENT_STEPS) == [
        (0, "one", 0, 0, 5, "0,2,4,6,8"),
        (0, "one", 0, 1, 5, "0,2,4,6,8"),
        (0, "two", 0, 0, 5, "1,3,5,7,9"),
        (0, "two", 0, 1, 5, "1,3,5,7,9"),
    ]
    assert rows(db, WORLD_STEPS) == [(0, 0, 0, 10, 1), (0, 0, 1, 10, 1)]
    # each world step carries the set points of exactly one agent
    setpoints = [
        json.loads(s)
        for (s,) in rows(db, "select setpoints from world_states order by episode, step")
    ]
    owners = ["one" if "board.0" in s else "two" for s in setpoints]
    assert owners == ["one", "two"] * 10
    assert all(len(s) == 5 for s in setpoints)


def test_two_workers_both_produce_rows(workspace: Workspace) -> None:
    start(workspace, EXPERIMENTS / "multiworker_run.yml")
    db = workspace.store
    steps = ",".join(str(i) for i in range(20))
    assert rows(db, PER_AGENT_STEPS) == [
        (0, "learner", 0, 0, 20, steps),
        (0, "learner", 0, 1, 20, steps),
        (0, "learner", 1, 0, 20, steps),
        (0, "learner", 1, 1, 20, steps),
        (1, "learner", 0, 0, 20, steps),
    ]
    assert rows(db, WORLD_STEPS) == [
        (0, 0, 0, 20, 1),
        (0, 0, 1, 20, 1),
        (0, 1, 0, 20, 1),
        (0, 1, 1, 20, 1),
        (1, 0, 0, 20, 1),
    ]
    # the workers' Muscles have different seeds, so they act differently
    by_worker = {
        worker: [
            s
            for (s,) in rows(
                db,
                "select actuator_setpoints from muscle_actions "
                "where worker = ? and agent_id = 1 order by id",
                worker,
            )
        ]
        for worker in (0, 1)
    }
    assert by_worker[0] != by_worker[1]


def test_the_same_run_file_gives_the_same_values(workspace: Workspace, tmp_path: Path) -> None:
    run_file = EXPERIMENTS / "multiworker_run.yml"
    start(workspace, run_file)
    first = workspace.store.rename(tmp_path / "first.db")
    start(workspace, run_file)
    actions = (
        "select agent_id, worker, episode, step, sensor_readings, actuator_setpoints, rewards, "
        "objective, done from muscle_actions order by agent_id, worker, episode, step"
    )
    world = (
        "select environment_id, worker, episode, step, sensors, setpoints, rewards, done "
        "from world_states order by environment_id, worker, episode, step"
    )
    for sql in (actions, world):
        assert rows(first, sql) == rows(workspace.store, sql)
        assert len(rows(first, sql)) == 100


@pytest.mark.parametrize("pythonpath", ["after", "first"])
def test_processes_carry_titles_and_get_their_context(
    workspace: Workspace, pythonpath: str
) -> None:
    """``first``: ``PYTHONPATH`` is the first variable of the command's environment, as a
    shell's ``PYTHONPATH=... palaestra ...`` puts it (palaestra changes it for its children:
    the titles' memory must have been claimed before)."""
    text = (EXPERIMENTS / "multiworker_run.yml").read_text()
    text = text.replace("palaestra.agent.dummy_brain:DummyBrain", "probes:ProbeBrain")
    text = text.replace("palaestra.agent.dummy_muscle:DummyMuscle", "probes:ProbeMuscle")
    run_file = workspace.path / "probe_run.yml"
    run_file.write_text(text)
    if pythonpath == "after":
        start(workspace, run_file)
    else:
        env = workspace.env()
        env = {"PYTHONPATH": env.pop("PYTHONPATH"), **env}
        proc = workspace.spawn(
            [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)], env=env
        )
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-3000:]
    dumps = [
        json.loads(d)
        for (d,) in rows(workspace.store, "select dump from brain_states order by id")
    ]
    assert {d["title"] for d in dumps} == {"palaestra[Brain-learner]"}
    last_of_phase_0 = [d for d in dumps if d["seed"] == dumps[0]["seed"]][-1]
    assert last_of_phase_0["muscle_titles"] == [
        "palaestra[Muscle-learner-0]",
        "palaestra[Muscle-learner-1]",
    ]
    assert dumps[0]["sensors"] == ["myenv.0", "myenv.1", "myenv.2"]
    assert len({d["seed"] for d in dumps}) == 2  # one seed per phase


def test_experiment_list_shows_finished_runs(workspace: Workspace) -> None:
    start(workspace, EXPERIMENTS / "taking_turns_run.yml")
    result = workspace.run("experiment-list")
    assert result.returncode == 0
    assert "taking-turns-run" in result.stdout and "finished" in result.stdout


def test_child_logs_reach_the_console_tagged_with_the_process(workspace: Workspace) -> None:
    result = workspace.run("-v", "experiment-start", str(EXPERIMENTS / "dummy_run.yml"))
    assert result.returncode == 0
    assert "palaestra[Brain-attacker] INFO" in result.stderr
    assert "started from a brain dump" in result.stderr
    quiet = workspace.run("experiment-start", str(EXPERIMENTS / "dummy_run.yml"))
    assert "INFO" not in quiet.stderr


def test_every_process_of_a_finished_run_exits_cleanly(workspace: Workspace) -> None:
    # 2 phases of 6 processes each, every one reported with its real exit status, not as a kill
    result = workspace.run("-vv", "experiment-start", str(EXPERIMENTS / "dummy_run.yml"))
    assert result.returncode == 0, result.stderr[-3000:]
    ended = re.findall(
        r"palaestra\.core\.supervision\.processes: (\S+) ended with (-?\d+)", result.stderr
    )
    assert len(ended) == 2 * 6 + 1  # and the StoreWriter
    assert {code for _, code in ended} == {"0"}, ended


def test_runtime_config_file_chooses_the_store_and_data_path(workspace: Workspace) -> None:
    config = workspace.path / "runtime.yaml"
    config.write_text("store_uri: sqlite:///elsewhere/results.db\ndata_path: ./dumps\n")
    result = workspace.run("-c", str(config), "start", str(EXPERIMENTS / "taking_turns_run.yml"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert not workspace.store.exists()
    store = workspace.path / "elsewhere" / "results.db"
    assert rows(store, "select count(*) from world_states") == [(20,)]
    assert sorted(p.name for p in (workspace.path / "dumps").rglob("*.bin")) == [
        "one.bin",
        "two.bin",
    ]


@pytest.mark.parametrize(("lag", "expected"), [(0, [0, 1, 2, 3, 4]), (1, [0, 0, 1, 1, 2])])
def test_update_lag_decides_which_brain_answer_a_muscle_acts_on(
    workspace: Workspace, lag: int, expected: list[int]
) -> None:
    # DummyBrain answers data + 1; a counting DummyMuscle sets what it was last told.
    text = (EXPERIMENTS / "taking_turns_run.yml").read_text()
    text = text.replace("episodes: 2", f"episodes: 2\n        update_lag: {lag}")
    run_file = workspace.path / "lag.yml"
    run_file.write_text(text)
    start(workspace, run_file)
    for episode in (0, 1):
        setpoints = [
            json.loads(s)["board.0"]
            for (s,) in rows(
                workspace.store,
                "select m.actuator_setpoints from muscle_actions m join agents a "
                "on a.id = m.agent_id where a.name = 'one' and m.episode = ? order by m.step",
                episode,
            )
        ]
        assert setpoints == expected


def test_two_environments_step_together_under_the_controller(workspace: Workspace) -> None:
    # With several environments the simulation controller drives the steps itself.
    text = (EXPERIMENTS / "dummy_run.yml").read_text()
    text = text.split("  - phase_1:")[0] + "run_config:" + text.split("run_config:")[1]
    text = text.replace(
        "            params: {discrete: true, max_iter: 10}\n",
        "            params: {discrete: true, max_iter: 10}\n"
        "        - environment:\n"
        "            name: palaestra.environment.dummy_environment:DummyEnvironment\n"
        "            uid: other\n"
        "            params: {discrete: true, max_iter: 6}\n",
    )
    text = text.replace(
        "actuators: [myenv.5, myenv.6, myenv.7, myenv.8, myenv.9]", "actuators: [other.0, other.1]"
    )
    text = text.replace(
        "sensors: [myenv.5, myenv.6, myenv.7, myenv.8, myenv.9]", "sensors: [myenv.5, other.0]"
    )
    run_file = workspace.path / "two_envs.yml"
    run_file.write_text(text)
    start(workspace, run_file)
    db = workspace.store
    # the shorter environment ends the episode for both
    assert rows(
        db,
        "select e.uid, count(*), sum(w.done) from world_states w join environments e "
        "on e.id = w.environment_id group by e.uid order by e.uid",
    ) == [
        ("myenv", 6, 0),
        ("other", 6, 1),
    ]
    setpoints = [
        json.loads(s)
        for (s,) in rows(
            db,
            "select setpoints from world_states w join "
            "environments e on e.id = w.environment_id "
            "where e.uid = 'other' order by step",
        )
    ]
    assert all(sorted(s) == ["other.0", "other.1"] for s in setpoints)
    sensors = json.loads(
        rows(
            db,
            "select sensor_readings from muscle_actions m join agents a "
            "on a.id = m.agent_id where a.name = 'attacker' limit 1",
        )[0][0]
    )
    assert sorted(sensors) == ["myenv.5", "other.0"]
    assert rows(db, "select count(*) from muscle_actions") == [(12,)]
