"""The environment is blamed for what it returns (issue 9, defect 13).

A sensor value of the wrong shape or type, or outside its declared space, a reward outside
its space, an unknown or a missing sensor: each fails the run naming the environment's process
and class, the method, the uid and the value, on the first step as on later ones, never the
Muscle that would trip over it. ``check_values: false`` switches the per-step check off.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import Edit, Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

_ENV = "palaestra.environment.dummy_environment:DummyEnvironment"
_ENV_PARAMS = "params: {discrete: true, max_iter: 10}"
_SIMULATION = "      simulation:\n"
_PLUGIN = "misbehaving:BadValueEnvironment"


def bad_environment(how: str, at: int) -> tuple[Edit, ...]:
    return (
        (_ENV, _PLUGIN),
        (_ENV_PARAMS, f"params: {{discrete: true, max_iter: 10, how: {how}, at: {at}}}"),
    )


def simulation_params(params: str) -> Edit:
    return (_SIMULATION, f"{_SIMULATION}        params: {{{params}}}\n")


CASES = [
    pytest.param(
        "shape",
        1,
        "update returned sensor '0' = array([0.5, 0.5], dtype=float32) (shape (2,), dtype "
        "float32), which is not in its declared space Box(low=[0.0, 0.0, 0.0], "
        "high=[1.0, 1.0, 1.0], shape=(3,), dtype=np.float32)",
        id="wrong-shape-first-step",
    ),
    pytest.param(
        "shape", 5, "update returned sensor '0' = array([0.5, 0.5]", id="wrong-shape-later"
    ),
    pytest.param(
        "outside", 5, "update returned sensor '0' = array([7., 7., 7.]", id="outside-later"
    ),
    pytest.param("dtype", 1, "update returned sensor '0' = 'half', which is not", id="dtype"),
    pytest.param(
        "reward",
        3,
        "update returned reward 'Dummy Reward' = 1000000, which is not in its declared space "
        "Discrete(11)",
        id="reward-outside",
    ),
    pytest.param(
        "unknown", 4, "update returned sensor 'zz', which its start did not declare", id="unknown"
    ),
    pytest.param(
        "missing", 4, "update did not return sensor '0', which its start declared", id="missing"
    ),
    pytest.param(
        "shape", 0, "start_environment returned sensor '0' = array([0.5, 0.5]", id="in-start"
    ),
]


@pytest.mark.parametrize(("how", "at", "problem"), slow_after(CASES, 2))
def test_a_bad_value_fails_the_run_blaming_the_environment(
    workspace: Workspace, how: str, at: int, problem: str
) -> None:
    run_file = workspace.variant("taking_turns_run.yml", *bad_environment(how, at))
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr[-3000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    headline = f"Environment-board-0: PluginContractError: {_PLUGIN}.{problem}"
    assert reason.startswith(headline), reason
    assert headline in result.stderr
    assert "Muscle" not in reason and "Traceback" not in result.stderr
    with sqlite3.connect(workspace.store) as conn:
        stored = [
            json.loads(s)["board.0"] for (s,) in conn.execute("select sensors from world_states")
        ]
    assert len(stored) == max(0, at - 1)  # the steps before it, not the bad one
    assert all(value == [0.5, 0.5, 0.5] for value in stored)


@pytest.mark.parametrize("driver", ["controller", "environment"])
def test_check_values_false_switches_the_per_step_check_off(
    workspace: Workspace, driver: str
) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        *bad_environment("outside", 5),
        simulation_params(f"check_values: false, driver: {driver}"),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(workspace.store) as conn:
        stored = [
            json.loads(s)["board.0"]
            for (s,) in conn.execute("select sensors from world_states order by episode, step")
        ]
    assert stored[4] == [7.0, 7.0, 7.0] and stored[3] == [0.5, 0.5, 0.5]


def test_the_first_step_is_checked_even_when_the_check_is_off(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        *bad_environment("outside", 1),
        simulation_params("check_values: false"),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr[-3000:]
    assert workspace.instance_status()[1].startswith(
        f"Environment-board-0: PluginContractError: {_PLUGIN}.update returned sensor '0' = "
        "array([7., 7., 7.]"
    )


def test_check_values_must_be_a_bool(workspace: Workspace) -> None:
    run_file = workspace.variant("taking_turns_run.yml", simulation_params("check_values: no"))
    result = workspace.run("experiment-check-syntax", str(run_file), timeout=60)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "simulation.params.check_values: expected true or false, got 'no'." in result.stderr
