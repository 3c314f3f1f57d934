"""The FrozenLake Q-learning example runs end to end on a tiny budget: it trains, stores its
table as a brain dump, and its test phase plays greedily with that table."""

from __future__ import annotations

import io
import json
import os
import sqlite3

import numpy as np
import pytest

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(120)


def test_the_example_trains_stores_its_table_and_tests_greedily_with_it(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_file = workspace.variant(
        "frozenlake_q.yml",
        ("{is_slippery: true}", "{is_slippery: false, desc: [SF, FG]}"),  # a 2x2 lake
        ("explore_episodes: 4000", "explore_episodes: 20"),
        ("episodes: 5000", "episodes: 30"),
        ("episodes: 1000", "episodes: 5"),
    )
    path = [str(EXPERIMENTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, path)))
    result = workspace.run("experiment-start", str(run_file), timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        (dump,) = conn.execute(
            "select b.dump from brain_states b join agents a on a.id = b.agent_id "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            "where p.name = 'train' order by b.id desc limit 1"
        ).fetchone()
        test_rows = conn.execute(
            "select w.episode, w.sensors, w.setpoints, w.rewards, w.done from world_states w "
            "join environments e on e.id = w.environment_id "
            "join experiment_run_phases p on p.id = e.experiment_run_phase_id "
            "where p.name = 'test' order by w.episode, w.step"
        ).fetchall()
    q = np.load(io.BytesIO(dump))
    assert q.shape == (4, 4) and q.max() > 0  # it found the goal and learnt from it
    cell, checked = 0, 0  # every episode starts in cell 0
    for _, sensors, setpoints, _, done in test_rows:
        action = json.loads(setpoints)["lake.action"]
        if (q[cell] == q[cell].max()).sum() == 1:  # a greedy choice without ties
            assert action == int(np.argmax(q[cell]))
            checked += 1
        cell = 0 if done else json.loads(sensors)["lake.obs"]
    assert checked >= 5
    finals = [json.loads(rewards)["reward"] for *_, rewards, done in test_rows if done]
    assert finals == [1.0] * 5  # the greedy policy reaches the goal every time
