"""A Muscle may set only the actuators its agent was given (issue 9, defect 1), and only to
values in their declared spaces.

A set point for another agent's actuator, a nonexistent one or one of an environment the agent
does not act on fails the run naming the Muscle and the uid; so does a value outside its
actuator's space (the Muscle is blamed, not the environment that would trip over it, and on an
environment that does not check, the run does not end "finished" with the value stored). It is
never applied or stored.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

_ATTACKER_MUSCLE = (
    "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
    "          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: "
    "{params: 1}}\n          sensors: [myenv.5"
)


def failed(workspace: Workspace, run_file: Path) -> tuple[str, str]:
    """Run ``run_file``, which must fail (exit 1, the run marked ``error``); its reason and the
    command's stderr."""
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr[-3000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    return reason, result.stderr


def attacker_muscle(muscle: str) -> tuple[str, str]:
    """The run-file edit that gives the attacker ``muscle`` (``module:Class, params: {...}``)."""
    return _ATTACKER_MUSCLE, _ATTACKER_MUSCLE.replace(
        "palaestra.agent.dummy_muscle:DummyMuscle, params: {}", muscle
    )


@pytest.mark.parametrize("driver", ["controller", "environment"])
@pytest.mark.parametrize("foreign", slow_after(["myenv.0", "myenv.99", "nowhere.0"]))
def test_a_setpoint_for_an_actuator_not_given_fails_the_run(
    workspace: Workspace, foreign: str, driver: str
) -> None:
    # the attacker owns myenv.5 ... myenv.9; myenv.0 is the defender's
    run_file = workspace.variant(
        "dummy_run.yml",
        attacker_muscle(f"misbehaving:ForeignActuatorMuscle, params: {{extra: {foreign}}}"),
        ("      simulation:\n", f"      simulation:\n        params: {{driver: {driver}}}\n"),
    )
    reason, err = failed(workspace, run_file)
    assert reason.startswith("Muscle-attacker-0: PluginContractError: ")
    assert "misbehaving:ForeignActuatorMuscle.propose_actions" in reason
    assert f"set actuator '{foreign}', which agent 'attacker' was not given" in reason
    assert reason.splitlines()[0] in err
    with sqlite3.connect(workspace.store) as conn:
        world = [json.loads(s) for (s,) in conn.execute("select setpoints from world_states")]
        acted = [
            json.loads(s)
            for (s,) in conn.execute(
                "select actuator_setpoints from muscle_actions m join agents a "
                "on a.id = m.agent_id where a.name = 'attacker'"
            )
        ]
    assert all(0.123 not in setpoints.values() for setpoints in world)  # never applied
    assert all(foreign not in setpoints for setpoints in acted)  # never stored


@pytest.mark.parametrize(
    "variant",
    slow_after(["controller", "environment", "games"]),
)
def test_a_setpoint_outside_its_space_fails_the_run_naming_the_muscle(
    workspace: Workspace, variant: str
) -> None:
    """DummyEnvironment's actuators are Discrete(100) and it applies whatever it is given: the
    Muscle's 100 must not end as a finished run with 100 stored."""
    driver = "controller" if variant == "controller" else "environment"
    replacements = [
        attacker_muscle("misbehaving:OutOfSpaceMuscle, params: {value: 100, at: 1}"),
        ("      simulation:\n", f"      simulation:\n        params: {{driver: {driver}}}\n"),
    ]
    if variant == "games":  # several games per worker: the per-round path
        replacements.append(("worker: 1", "worker: 1\n        envs_per_worker: 2"))
    run_file = workspace.variant("dummy_run.yml", *replacements)
    reason, _ = failed(workspace, run_file)
    assert reason.startswith("Muscle-attacker-0: PluginContractError: "), reason
    assert "misbehaving:OutOfSpaceMuscle.propose_actions" in reason
    step = 0 if variant == "games" else 1  # two games: the second call is game 1's step 0
    assert f"set actuator 'myenv.5' to 100 at step {step} of episode 0" in reason
    assert "which is not in its declared space Discrete(100); nothing was applied" in reason
    with sqlite3.connect(workspace.store) as conn:
        stored = [json.loads(s) for (s,) in conn.execute("select setpoints from world_states")]
    assert all(100 not in setpoints.values() for setpoints in stored)  # never applied


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("list", ""),  # palaestrAI takes the set points alone: the run finishes
        ("triple", "propose_actions returned a tuple of 3 items"),
        ("dict", "propose_actions returned dict {"),
    ],
)
def test_what_propose_actions_returns_is_taken_as_palaestrai_does_or_named(
    workspace: Workspace, how: str, expected: str
) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        attacker_muscle(f"misbehaving:ReturnShapeMuscle, params: {{how: {how}}}"),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    status, reason = workspace.instance_status()
    if not expected:
        assert result.returncode == 0, result.stderr[-3000:]
        assert status == "finished"
        return
    assert result.returncode == 1, result.stderr[-3000:]
    assert reason.startswith("Muscle-attacker-0: PluginContractError: misbehaving:"), reason
    assert expected in reason
    assert "expected the set points (the actuators it was given, each set" in reason
    assert "Traceback" not in result.stderr


def test_an_update_that_cannot_be_pickled_names_the_brains_thinking(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}",
            "brain: {name: misbehaving:UnpicklableUpdateBrain, params: {}}",
        ),
    )
    reason, err = failed(workspace, run_file)
    assert reason.startswith("Brain-defender: PluginContractError: misbehaving:"), reason
    assert "UnpicklableUpdateBrain.thinking returned function <function " in reason
    assert "which cannot be pickled" in reason and "(see docs/plugin-api.md)" in reason
    assert "Traceback" not in err
