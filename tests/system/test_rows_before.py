"""The rows of deterministic runs equal, column for column, those the code before issue 22's one
engine wrote (commit be2dc9c: a single-game environment driver, a lanes engine for several
games, the controller's own episode loop for several environments, TakingTurns and ``driver:
controller``).

What that code wrote is kept in ``rows_before.json`` beside this file (the rows, not the
stores): each case's ``world_states``, ``muscle_actions`` and ``episodes`` without ids and
times, as the SQLite store holds them (JSON columns as their text). It was made by running this
module as a script with the old code first on the path::

    git worktree add /tmp/before be2dc9c
    PYTHONPATH=/tmp/before python tests/system/test_rows_before.py tests/system/rows_before.json

One case holds rows that code got wrong, since set right: in ``two_environments`` both
CartPoles name their reward ``reward``, and a ``muscle_actions`` row kept one of the two
(``{"reward":1.0}``, ``reward`` 1.0 beside the objective's 2.0), an episode's reward half the
sum. Its ``muscle_actions.rewards`` and ``reward`` and its ``episodes.rewards`` are now the
fixed code's (both rewards, as a list: ``[{"uid":"reward","value":1.0},{"uid":"reward",
"value":1.0}]``, ``reward`` 2.0); every other value of it, and every other case, is the old
code's.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "rows_before.json"
PLUGINS = HERE.parent / "plugins"

pytestmark = pytest.mark.timeout(120)

AGENT = """\
        - name: {name}
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: games:LinearMuscle, params: {{weights: {weights}}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [{sensors}]
          actuators: [{actuators}]
"""
ENVIRONMENT = """\
        - environment:
            name: palaestra.environment.cartpole:CartPole
            uid: {uid}
            params: {{max_steps: {steps}}}
"""
RUN = """\
uid: rows-before
experiment_uid: rows-before
seed: 5
version: "0.1"
schedule:
  - phase_0:
      environments:
{environments}      agents:
{agents}      simulation:
        name: {simulation}
        params: {params}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: 2{extra}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""
VANILLA = "palaestra.simulation:Vanilla"


def run_text(
    *,
    workers: int = 2,
    environments: tuple[str, ...] = ("pole",),
    agents: tuple[tuple[str, str, str], ...] = (("player", "pole.state", "pole.push"),),
    weights: str = "[0, 0, 1, 1]",
    simulation: str = VANILLA,
    params: str = "{}",
    extra: str = "",
) -> str:
    return RUN.format(
        environments="".join(
            ENVIRONMENT.format(uid=uid, steps=12 + 5 * k) for k, uid in enumerate(environments)
        ),
        agents="".join(
            AGENT.format(name=name, sensors=sensors, actuators=actuators, weights=weights)
            for name, sensors, actuators in agents
        ),
        simulation=simulation,
        params=params,
        workers=workers,
        extra=extra,
    )


TWO_AGENTS = (("left", "pole.state", "pole.push"), ("right", "pole.state", "pole.push"))
CASES = {
    # the environment drove one game per worker (falling poles: terminated episodes)
    "one_game": run_text(weights="[0, 0, 0, -1]"),
    "one_game_balanced": run_text(),
    # the lanes engine
    "four_games": run_text(workers=1, extra=", envs_per_worker: 4"),
    "four_games_lag_1": run_text(workers=1, extra=", envs_per_worker: 4, update_lag: 1"),
    # the controller's own episode loop
    "taking_turns": run_text(agents=TWO_AGENTS, simulation="palaestra.simulation:TakingTurns"),
    "driver_controller": run_text(params="{driver: controller}"),
    "two_environments": run_text(
        environments=("pole", "other"),
        agents=(
            ("player", "pole.state", "pole.push"),
            ("second", "other.state, pole.state", "other.push"),
        ),
    ),
    "lag_1": run_text(workers=1, extra=", update_lag: 1"),
}

QUERIES = {
    "world_states": """
        select e.uid, w.worker, w.episode, w.step, w.sensors, w.setpoints, w.rewards, w.done,
               w.terminated, w.truncated, w.simtime, w.late_by
        from world_states w join environments e on e.id = w.environment_id
        order by e.uid, w.worker, w.episode, w.step""",
    "muscle_actions": """
        select a.name, m.worker, m.episode, m.step, m.sensor_readings, m.actuator_setpoints,
               m.rewards, m.reward, m.objective, m.done, m.terminated, m.truncated,
               m.stale_policy
        from muscle_actions m join agents a on a.id = m.agent_id
        order by a.name, m.worker, m.episode, m.step""",
    "episodes": """
        select worker, episode, steps, terminated, truncated, rewards
        from episodes order by worker, episode""",
}


def rows_of(store: Path) -> dict[str, list[list[Any]]]:
    """The case's rows by table, as the store holds them."""
    with sqlite3.connect(store) as conn:
        return {
            table: [list(row) for row in conn.execute(query)] for table, query in QUERIES.items()
        }


def play(case: str, workdir: Path) -> dict[str, list[list[Any]]]:
    """Run ``case`` in ``workdir`` with the palaestra first on the path; its rows."""
    path = workdir / "run.yml"
    path.write_text(CASES[case])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(PLUGINS)]))
    env.pop("PALAESTRA_STORE_URI", None)
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "experiment-start", str(path)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return rows_of(workdir / "palaestra.db")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rows_equal_what_the_code_before_the_one_engine_wrote(
    case: str, tmp_path: Path
) -> None:
    before = json.loads(FIXTURE.read_text())[case]
    now = play(case, tmp_path)
    for table, rows in before.items():
        assert rows, (case, table)
        found = now[table]
        for k, (old, new) in enumerate(zip(rows, found, strict=False)):
            assert new == old, f"{case}: {table} row {k} differs"
        assert len(found) == len(rows), (case, table)


if __name__ == "__main__":  # write the fixture with the palaestra first on the path
    made = {}
    for name in sorted(CASES):
        with tempfile.TemporaryDirectory() as scratch:
            made[name] = play(name, Path(scratch))
    Path(sys.argv[1]).write_text(json.dumps(made, separators=(",", ":")) + "\n")
