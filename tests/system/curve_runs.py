"""A small run whose episode rewards and statistics vary (tests/plugins/curve_plugins.py),
for the tests of ``palaestra plot`` and ``palaestra export``, and the store's own rows read
back with plain SQL to compare with."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest
from click.testing import Result

from palaestra.cli.main import cli
from tests.conftest import Workspace, cli_runner, wait_until_gone

RUN = """\
uid: {uid}
experiment_uid: curve-tests
seed: {seed}
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: curve_plugins:ImprovingEnvironment
            uid: env
            params: {{max_iter: 6}}
      agents:
        - name: learner
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: curve_plugins:StatisticMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.step]
          actuators: [env.act]
        - name: watcher
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.step]
          actuators: []
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 2, episodes: 5}}
  - test:
      phase_config: {{mode: test, worker: 1, episodes: 2}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
AGENTS = ("learner", "watcher")
_SHARED: list[Workspace] = []


def shared_curves(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A store with the runs ``curve-a`` (seed 3) and ``curve-b`` (seed 4), made once per test
    session for every test module that only reads it."""
    if not _SHARED:
        workspace = Workspace(tmp_path_factory.mktemp("curves"))
        run_curves(workspace, "curve-a", seed=3)
        run_curves(workspace, "curve-b", seed=4)
        _SHARED.append(workspace)
    return _SHARED[0]


def run_curves(workspace: Workspace, uid: str, seed: int, record: str = "all") -> None:
    """Run the curve run file as ``uid`` with ``seed`` into the workspace's store, its train
    phase recording ``record`` (``all``, ``episodes``, ...)."""
    path = workspace.path / f"{uid}.yml"
    text = RUN.format(uid=uid, seed=seed)
    assert "worker: 2, episodes: 5}" in text
    path.write_text(text.replace("episodes: 5}", f"episodes: 5, record: {record}}}"))
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr
    assert not wait_until_gone(workspace.sessions)


def invoke(workspace: Workspace, *args: str) -> Result:
    """``palaestra ARGS`` in-process (click's runner) on the workspace's store."""
    env = {"PALAESTRA_STORE_URI": workspace.store_uri, "PALAESTRA_DATA_PATH": None}
    return cli_runner(env).invoke(cli, list(args), prog_name="palaestra")


def store_episodes(
    store: Path, run: str, agent: str
) -> list[tuple[int, str, int, int, int, float]]:
    """(phase, phase name, worker, episode, world steps, reward sum) of an agent's episodes,
    in the store's own rows, in the order they ended."""
    sql = """
        select p."index", p.name, m.worker, m.episode, e.steps, sum(m.reward)
        from muscle_actions m
        join agents a on m.agent_id = a.id
        join experiment_run_phases p on a.experiment_run_phase_id = p.id
        join experiment_run_instances i on p.experiment_run_instance_id = i.id
        join experiment_runs r on i.experiment_run_id = r.id
        join episodes e on e.experiment_run_phase_id = p.id
            and e.worker = m.worker and e.episode = m.episode
        where r.uid = ? and a.name = ?
        group by p."index", p.name, m.worker, m.episode, e.steps, e.ended_at
        order by p."index", e.ended_at
    """
    with sqlite3.connect(store) as conn:
        return list(conn.execute(sql, (run, agent)))


def store_statistic(
    store: Path, run: str, agent: str, key: str
) -> dict[tuple[int, int, int], list[float]]:
    """The values of statistic ``key`` of an agent by (phase, worker, episode)."""
    sql = """
        select p."index", s.worker, s.episode, json_extract(s.statistics, '$.' || ?)
        from statistics s
        join agents a on s.agent_id = a.id
        join experiment_run_phases p on a.experiment_run_phase_id = p.id
        join experiment_run_instances i on p.experiment_run_instance_id = i.id
        join experiment_runs r on i.experiment_run_id = r.id
        where r.uid = ? and a.name = ? and s.episode >= 0
        order by s.id
    """
    found: dict[tuple[int, int, int], list[float]] = {}
    with sqlite3.connect(store) as conn:
        for phase, worker, episode, value in conn.execute(sql, (key, run, agent)):
            if value is not None:
                found.setdefault((phase, worker, episode), []).append(float(value))
    return found


def store_end_times(store: Path, run: str) -> list[float]:
    """When each episode of the run ended (POSIX seconds), in that order, by phase."""
    sql = """
        select e.ended_at from episodes e
        join experiment_run_phases p on e.experiment_run_phase_id = p.id
        join experiment_run_instances i on p.experiment_run_instance_id = i.id
        join experiment_runs r on i.experiment_run_id = r.id
        where r.uid = ?
        order by p."index", e.ended_at
    """
    with sqlite3.connect(store) as conn:
        return [
            dt.datetime.fromisoformat(ended).replace(tzinfo=dt.UTC).timestamp()
            for (ended,) in conn.execute(sql, (run,))
        ]


def store_episode_rewards(store: Path, run: str, agent: str) -> list[tuple[str, float, int]]:
    """(phase name, the agent's reward, world steps) of the run's episodes from the store's
    ``episodes`` table, in the order they ended, by phase."""
    sql = """
        select p.name, json_extract(e.rewards, '$.' || ?), e.steps from episodes e
        join experiment_run_phases p on e.experiment_run_phase_id = p.id
        join experiment_run_instances i on p.experiment_run_instance_id = i.id
        join experiment_runs r on i.experiment_run_id = r.id
        where r.uid = ?
        order by p."index", e.ended_at
    """
    with sqlite3.connect(store) as conn:
        return list(conn.execute(sql, (agent, run)))
