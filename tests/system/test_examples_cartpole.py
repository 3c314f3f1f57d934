"""The CartPole PPO example (``experiments/cartpole_ppo.py`` and ``.yml``) end to end through
the CLI, with a tiny budget: it trains, dumps its model, and the test phase loads it."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXPERIMENTS, Workspace, needs

pytestmark = [
    needs("torch", "the CartPole example needs torch: pip install 'palaestra[torch]'"),
    needs("gymnasium", "the CartPole example needs gymnasium: pip install 'palaestra[gym]'"),
    pytest.mark.timeout(120),
]


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


EPISODES = """
    select p.name, count(distinct m.episode), count(*)
    from muscle_actions m join agents a on a.id = m.agent_id
    join experiment_run_phases p on p.id = a.experiment_run_phase_id
    group by p."index" order by p."index"
"""


@pytest.mark.slow
def test_cartpole_ppo_trains_dumps_and_tests_from_the_dump(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the plug-ins are the module cartpole_ppo in experiments/
    path = [str(EXPERIMENTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, path)))
    # 3 train episodes cut off after 12 steps (CartPole-v1's limit is 500), an update after
    # every 16 steps, 2 test episodes
    run_file = workspace.variant(
        "cartpole_ppo.yml",
        ("{env_id: CartPole-v1}", "{env_id: CartPole-v1, env_kwargs: {max_episode_steps: 12}}"),
        ("params: {episodes: &budget 300}", "params: {episodes: &budget 3, rollout_steps: 16}"),
        ("episodes: 100", "episodes: 2"),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=100)
    assert result.returncode == 0, result.stderr[-3000:]
    db = workspace.store
    assert rows(db, "select status from experiment_run_instances") == [("finished",)]
    (train, test) = rows(db, EPISODES)
    assert train[:2] == ("train", 3) and test[:2] == ("test", 2)
    assert train[2] >= 3 * 8 and test[2] >= 2 * 8  # CartPole lasts at least 8 steps
    # the Brain knew which episodes were cut off (to bootstrap their last step), from its
    # memory's rows: its time_limit (500) would have said none was
    ends = rows(
        db,
        "select e.episode, e.truncated, s.statistics from episodes e "
        "join experiment_run_phases p on p.id = e.experiment_run_phase_id "
        "join agents a on a.experiment_run_phase_id = p.id "
        "join statistics s on s.agent_id = a.id and s.episode = e.episode "
        "and s.source = 'brain' "
        "where p.name = 'train' order by e.episode",
    )
    assert [episode for episode, *_ in ends] == [0, 1, 2]
    assert [json.loads(stats)["truncated"] for _, _, stats in ends] == [
        bool(truncated) for _, truncated, _ in ends
    ]
    assert any(truncated for _, truncated, _ in ends)
    # the Brain dumped its model (tag "model") in the train phase, whenever it had changed ...
    dumps = rows(
        db,
        "select b.id, p.name, b.tag, length(b.dump) from brain_states b "
        "join agents a on a.id = b.agent_id "
        "join experiment_run_phases p on p.id = a.experiment_run_phase_id order by b.id",
    )
    assert dumps and {(phase, tag) for _, phase, tag, _ in dumps} == {("train", "model")}
    assert all(size > 0 for *_, size in dumps)
    # ... and the test phase's agent was loaded from the newest (its Muscle fails without one)
    ((loaded_from,),) = rows(
        db,
        "select a.loaded_from from agents a "
        "join experiment_run_phases p on p.id = a.experiment_run_phase_id where p.name = 'test'",
    )
    source = json.loads(loaded_from)
    assert (source["phase"], source["agent"]) == (0, "ppo")
    assert source["brain_state_id"] == dumps[-1][0]
