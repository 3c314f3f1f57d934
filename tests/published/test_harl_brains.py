"""harl's DDPG, TD3, SAC and PPO (palaestrai-agents) train, then test, on palaestra unchanged.

Each run file here (``harl_<algorithm>_run.yml``) is written as a palaestrAI user writes one:
harl's brains and muscles, palaestrAI's dummy objective and built-ins, palaestrai-environments'
continuous random environment. Each runs through the real CLI: it must finish with exit 0 and
no ERROR line in the verbose log, leave non-empty dumps of every tag harl stores, and its test
phase must act from its first step with the trained actor: the first set points of the test
phase are what the newest stored actor of the training phase computes from the first stored
observation of the test phase (and not what an older one computes).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).resolve().parent
SENSORS = ["myenv.Sensor-0", "myenv.Sensor-1"]
ACTUATORS = ["myenv.Actuator-0", "myenv.Actuator-1"]
LOW, HIGH = 0.0, 10.0  # the environment's actuator space: Box(0, 10)


def off_policy_action(actor: Any, obs: Any) -> np.ndarray:
    """harl's OffPolicyMuscle in a test phase: the actor's tanh output, no noise, mapped from
    [-1, 1] onto the actuator's Box."""
    scaled = np.asarray(actor.act(obs), dtype=np.float64).flatten()
    return LOW + 0.5 * (scaled + 1.0) * (HIGH - LOW)


def sac_action(actor: Any, obs: Any) -> np.ndarray:
    """harl's SACMuscle in a test phase: the deterministic action (the actor scales it to the
    Box itself), clipped to the Box."""
    return np.clip(np.asarray(actor.act(obs, True)[0], dtype=np.float64).flatten(), LOW, HIGH)


def ppo_action(actor: Any, obs: Any) -> np.ndarray:
    """harl's PPOMuscle in a test phase: the policy's mean, set (clipped) into the Box."""
    action = actor.act(obs, deterministic=True)[0]
    return np.clip(action.detach().numpy().astype(np.float64).flatten(), LOW, HIGH)


@dataclass(frozen=True)
class Algorithm:
    name: str
    agent: str
    tags: tuple[str, ...]
    """Every tag harl's brain stores a dump under."""
    actor_tag: str
    act: Callable[[Any, Any], np.ndarray]


OFF_POLICY_TAGS = ("actor", "actor_target", "critic", "critic_target", "rb")
ALGORITHMS = [
    Algorithm(
        "ddpg", "ddpg_agent", tuple(f"ddpg_{t}" for t in OFF_POLICY_TAGS), "ddpg_actor",
        off_policy_action,
    ),
    Algorithm(
        "td3", "td3_agent", tuple(f"td3_{t}" for t in OFF_POLICY_TAGS), "td3_actor",
        off_policy_action,
    ),
    Algorithm("sac", "sac_agent", ("sac_actor", "sac_critic"), "sac_actor", sac_action),
    Algorithm("ppo", "ppo_agent", ("ppo_actor", "ppo_critic"), "ppo_actor", ppo_action),
]  # fmt: skip


def dumps(conn: sqlite3.Connection, phase: int, tag: str) -> list[bytes]:
    """The dumps with ``tag`` of the one agent in phase ``phase``, oldest first."""
    rows = conn.execute(
        "select b.dump from brain_states b join agents a on a.id = b.agent_id "
        "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
        'where p."index" = ? and b.tag = ? order by b.id',
        (phase, tag),
    ).fetchall()
    return [bytes(row[0]) for row in rows]


def first_test_step(conn: sqlite3.Connection) -> tuple[list[float], list[float]]:
    """The observation and the set points of the test phase's first step."""
    readings, setpoints = conn.execute(
        "select m.sensor_readings, m.actuator_setpoints from muscle_actions m "
        "join agents a on a.id = m.agent_id "
        "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
        'where p."index" = 1 order by m.episode, m.step limit 1'
    ).fetchone()
    obs, acts = json.loads(readings), json.loads(setpoints)
    return [float(obs[uid]) for uid in SENSORS], [float(acts[uid]) for uid in ACTUATORS]


def compute(torch: ModuleType, algorithm: Algorithm, dump: bytes, obs: list[float]) -> np.ndarray:
    import io

    actor = torch.load(io.BytesIO(dump), weights_only=False, map_location="cpu")
    actor.eval()
    with torch.no_grad():
        return algorithm.act(actor, torch.tensor(obs, dtype=torch.float))


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
def test_harl_brain_trains_then_tests_with_the_trained_actor(
    workspace: Workspace, torch_with_harl: ModuleType, algorithm: Algorithm
) -> None:
    torch = torch_with_harl
    result = workspace.run(
        "-v", "experiment-start", str(HERE / f"harl_{algorithm.name}_run.yml"), timeout=100
    )

    assert result.returncode == 0, result.stderr[-4000:]
    log = result.stdout + result.stderr
    errors = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    assert not errors, "\n".join(errors)
    assert workspace.instance_status()[0] == "finished"

    with sqlite3.connect(workspace.store) as conn:
        for tag in algorithm.tags:
            trained = dumps(conn, 0, tag)
            assert trained and all(trained), f"phase 0 left no non-empty dump tagged {tag!r}"
        (loaded_from,) = conn.execute(
            "select a.loaded_from from agents a "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            'where p."index" = 1'
        ).fetchone()
        assert json.loads(loaded_from)["phase"] == 0
        actors = dumps(conn, 0, algorithm.actor_tag)
        obs, setpoints = first_test_step(conn)
        statistics = conn.execute(
            "select count(*) from statistics where source = 'brain'"
        ).fetchone()[0]

    assert statistics > 0, "harl's brain recorded no statistics (add_statistics)"
    expected = compute(torch, algorithm, actors[-1], obs)
    np.testing.assert_allclose(setpoints, expected, rtol=1e-5, atol=1e-5)
    # The newest actor is the trained one: training changed it after the first dump. (Where
    # the first actor acts otherwise on this observation, the equality above also shows that the
    # test phase did not act with it; a policy saturated at an actuator's bound may act alike.)
    assert actors[0] != actors[-1], "the actor did not change while training"
