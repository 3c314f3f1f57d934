"""Real-time pacing and ``update_lag: async``, end to end through ``palaestra experiment-start``.

The plug-ins (tests/plugins/pacing_plugins.py) record when each step of the world began
(``plugin_records``); the assertions read that and ``world_states.late_by`` /
``muscle_actions.stale_policy`` from the store, with bounds loose enough for a busy machine:
what they tell apart (a step on time or one stalled by a Brain; a schedule that catches up in a
burst or one that does not) differs by ten times that.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Workspace, slow_after

pytestmark = pytest.mark.timeout(60)

RUN = """\
uid: pacing
experiment_uid: pacing
seed: 5
version: "0.1"
schedule:
  - paced:
      environments:
        - environment:
            name: pacing_plugins:ClockEnvironment
            uid: env
            params:
              max_iter: {steps}
              slow_at: {slow_at}
              slow_seconds: {slow_seconds}
              stepped_file: "{stepped_file}"
      agents:
        - name: agent
          brain:
            name: pacing_plugins:SlowBrain
            params: {{calls: {block_calls}, seconds: {block_seconds}, fail_at: {fail_at}}}
          muscle:
            name: pacing_plugins:SlowMuscle
            params: {{count_upwards: true, slow_at: {muscle_slow_at}, slow_seconds: 0.06}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0, env.1]
          actuators: [env.0, env.1]
      simulation:
        name: palaestra.simulation:Vanilla
        params: {{driver: {driver}}}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: {episodes}, step_rate: {rate},
                      update_lag: {lag}{extra}}}
  - second:
      phase_config: {{step_rate: {second_rate}, update_lag: {second_lag}, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""

DEFAULTS: dict[str, Any] = {
    "steps": 40,
    "slow_at": 0,
    "slow_seconds": 0.0,
    "block_calls": [],
    "block_seconds": 0.0,
    "fail_at": 0,
    "muscle_slow_at": 0,
    "stepped_file": "",
    "driver": "auto",
    "episodes": 1,
    "rate": 50,
    "lag": 0,
    "second_rate": 0,
    "second_lag": 0,
    "extra": "",
}


def run_file(ws: Workspace, **values: Any) -> Path:
    path = ws.path / "run.yml"
    path.write_text(RUN.format(**(DEFAULTS | values)))
    return path


def run(ws: Workspace, expect: int = 0, **values: Any) -> str:
    """Run the run file with ``values``; its stderr (the exit code checked)."""
    path = run_file(ws, **values)
    result = ws.run("experiment-start", "-q", str(path), timeout=50)
    assert result.returncode == expect, result.stderr[-3000:]
    return result.stderr


def query(ws: Workspace, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(ws.store) as conn:
        return conn.execute(sql).fetchall()


def late_by(ws: Workspace, phase: int, episode: int = 0) -> dict[int, float | None]:
    """``world_states.late_by`` by step of the phase's episode."""
    rows = query(
        ws,
        f"""select w.step, w.late_by from world_states w
            join environments e on e.id = w.environment_id
            join experiment_run_phases p on p.id = e.experiment_run_phase_id
            where p."index" = {phase} and w.episode = {episode} order by w.step""",
    )
    return dict(rows)


def periods(ws: Workspace, phase: int, episode: int = 0, worker: int = 0) -> list[float]:
    """Seconds between the beginnings of consecutive steps (as the environment saw them) of
    the game ``worker`` (its lane)."""
    began = [
        float(json.loads(value) if isinstance(value, str) else value)
        for (value,) in query(
            ws,
            f"""select r.value from plugin_records r
                join experiment_run_phases p on p.id = r.experiment_run_phase_id
                where p."index" = {phase} and r.key = 'began' and r.episode = {episode}
                and r.worker = {worker} order by r.step""",
        )
    ]
    return [b - a for a, b in zip(began, began[1:], strict=False)]


def actions(ws: Workspace, phase: int, episode: int = 0) -> list[tuple[int, Any, bool | None]]:
    """(step, the first set point, stale_policy) of the phase's episode, in order."""
    rows = query(
        ws,
        f"""select m.step, m.actuator_setpoints, m.stale_policy from muscle_actions m
            join agents a on a.id = m.agent_id
            join experiment_run_phases p on p.id = a.experiment_run_phase_id
            where p."index" = {phase} and m.episode = {episode} order by m.step""",
    )
    return [
        (step, json.loads(points)["env.0"], None if stale is None else bool(stale))
        for step, points, stale in rows
    ]


def longest_stale_run(steps: list[tuple[int, Any, bool | None]]) -> list[int]:
    """The longest run of consecutive steps acted on a stale policy."""
    runs: list[list[int]] = [[]]
    for step, _, was_stale in steps:
        if was_stale:
            runs[-1].append(step)
        elif runs[-1]:
            runs.append([])
    return max(runs, key=len)


@pytest.mark.parametrize("driver", slow_after(["controller", "environment"]))
def test_steps_keep_their_rate_and_a_late_one_brings_no_burst(
    workspace: Workspace, driver: str
) -> None:
    # 50 Hz; the world's step 15 takes 60 ms, so step 16 begins about 40 ms late
    run(workspace, driver=driver, slow_at=15, slow_seconds=0.06)
    late = late_by(workspace, 0)
    assert sorted(late) == list(range(1, 41))
    assert None not in late.values()
    assert late[16] is not None and late[16] > 0.03
    gaps = periods(workspace, 0)
    assert 0.018 <= statistics.median(gaps) <= 0.023, gaps
    assert gaps[14] > 0.058  # the slow step 15; step 16, late, began right after it
    # catching up (steps 17 and 18 were due while step 15 took its 60 ms) would step them at
    # once: step 17 came about a period after step 16 (less what a busy machine delays a
    # step's start by), and nowhere did two steps follow within a period of the one before
    assert gaps[15] > 0.010, gaps
    assert all(a + b > 0.02 for a, b in zip(gaps, gaps[1:], strict=False)), gaps
    # the lockstep phase that follows records no lateness
    assert set(late_by(workspace, 1).values()) == {None}
    shown = workspace.run("experiment-show", "pacing")
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout[shown.stdout.index("Paced steps") :]
    line = next(row for row in table.splitlines() if row.startswith("0 paced"))
    assert line.split()[2] == "40"  # steps
    assert int(line.split()[3]) >= 1  # late by more than 1 ms: at least step 16
    assert not any(row.startswith("1 second") for row in table.splitlines())  # lockstep


def test_several_games_of_a_worker_keep_the_rate_each(workspace: Workspace) -> None:
    """With ``envs_per_worker`` each round is a step of each of its games, paced: every game
    steps at 50 Hz; the round after the slow step 15 (slow in both games) is late in both."""
    run(workspace, slow_at=15, slow_seconds=0.06, extra=", envs_per_worker: 2")
    late = query(
        workspace,
        """select w.worker, w.step, w.late_by from world_states w
           join environments e on e.id = w.environment_id
           join experiment_run_phases p on p.id = e.experiment_run_phase_id
           where p."index" = 0 and w.episode = 0 order by w.worker, w.step""",
    )
    assert {(worker, step) for worker, step, _ in late} == {
        (worker, step) for worker in (0, 1) for step in range(1, 41)
    }
    by_game = {(worker, step): value for worker, step, value in late}
    assert None not in by_game.values()
    assert by_game[(0, 16)] > 0.03 and by_game[(1, 16)] > 0.03, by_game
    for worker in (0, 1):
        gaps = periods(workspace, 0, worker=worker)
        assert len(gaps) == 39
        assert 0.018 <= statistics.median(gaps) <= 0.023, gaps


@pytest.mark.parametrize("driver", slow_after(["controller", "environment"]))
def test_a_muscle_late_with_its_set_points_makes_its_step_late(
    workspace: Workspace, driver: str
) -> None:
    # 50 Hz; the Muscle's 15th action (for step 15, the row of step 15) takes 60 ms: the step
    # begins when its set points are in, about 40 ms after its due time
    run(workspace, driver=driver, muscle_slow_at=15)
    late = late_by(workspace, 0)
    assert late[15] is not None and 0.03 < late[15] < 0.1, late
    gaps = periods(workspace, 0)
    assert gaps[13] > 0.05, gaps  # step 14 to 15
    assert gaps[14] > 0.010, gaps  # step 16 a period after the late step 15, no burst
    assert all(a + b > 0.02 for a, b in zip(gaps, gaps[1:], strict=False)), gaps


def test_an_async_muscle_does_not_wait_for_its_busy_brain(workspace: Workspace) -> None:
    # the Brain blocks 300 ms on its 10th thought; async in phase 0, waited for in phase 1
    run(
        workspace,
        episodes=2,
        block_calls=[10],
        block_seconds=0.3,
        lag="async",
        second_rate=50,
        second_lag=0,
    )
    # async: the world kept its pace while the Brain was busy
    late = late_by(workspace, 0)
    assert max(v for v in late.values() if v is not None) < 0.15, late
    assert max(periods(workspace, 0)) < 0.17
    steps = actions(workspace, 0)
    assert all(was_stale is not None for _, _, was_stale in steps)
    block = longest_stale_run(steps)
    assert len(block) >= 8, steps  # ~15 steps at 50 Hz acted on the old policy
    # the policy stood still while the blocked Brain's update was out (the longest stretch of
    # stale steps with one policy: on a busy machine the Brain may also lag a little before
    # and after its block, with the policy still moving), and moved once the answers came
    stale = [(step, point) for step, point, _ in steps if step in block]
    stretches = [[stale[0]]]
    for step, point in stale[1:]:
        if point == stretches[-1][-1][1]:
            stretches[-1].append((step, point))
        else:
            stretches.append([(step, point)])
    frozen = max(stretches, key=len)
    assert len(frozen) >= 8, steps
    last_step, point = frozen[-1]
    later = [(p, was_stale) for step, p, was_stale in steps if step > last_step]
    assert later[0][0] > point, steps
    assert not all(was_stale for _, was_stale in later), steps  # it caught up
    # nothing was lost: the final dump counts a thought per experience (41 per episode)
    ((dump,),) = query(
        workspace,
        """select b.dump from brain_states b join agents a on a.id = b.agent_id
           join experiment_run_phases p on p.id = a.experiment_run_phase_id
           where p."index" = 0 order by b.id desc limit 1""",
    )
    assert json.loads(dump)["thinking_calls"] == 2 * 41
    # update_lag 0: the world waits for the Brain's 300 ms
    waited = late_by(workspace, 1)
    assert max(v for v in waited.values() if v is not None) > 0.25, waited
    assert {was_stale for _, _, was_stale in actions(workspace, 1)} == {None}


def test_a_brain_failing_under_async_updates_fails_the_run(workspace: Workspace) -> None:
    stderr = run(workspace, expect=1, lag="async", fail_at=12)
    assert "SlowBrain fails on purpose at thinking call 12" in stderr
    status, reason = workspace.instance_status()
    assert status == "error", (status, reason)
    assert "SlowBrain" in reason


@pytest.mark.parametrize("driver", slow_after(["controller", "environment"]))
def test_ctrl_c_during_a_long_paced_wait_stops_the_run_at_once(
    workspace: Workspace, driver: str
) -> None:
    stepped = workspace.path / "stepped"
    path = run_file(workspace, driver=driver, rate=0.1, stepped_file=stepped)  # 10 s a step
    proc = workspace.start("experiment-start", "-q", str(path))
    deadline = time.monotonic() + 30
    while not stepped.exists():  # the first step is taken: the second is 10 s away
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    interrupted = time.monotonic()
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    # at once (0.1 s here), not after the wait nor killed after the stop's grace (4 s)
    assert time.monotonic() - interrupted < 2
    assert workspace.instance_status()[0] == "cancelled"
