"""A Muscle may set only the actuators its agent was given (issue 9, defect 1).

A set point for another agent's actuator, a nonexistent one or one of an environment the agent
does not act on fails the run naming the Muscle and the uid; it is never applied or stored.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import Workspace, slow_after

pytestmark = pytest.mark.timeout(120)

_ATTACKER_MUSCLE = (
    "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
    "          objective: {name: palaestra.agent.dummy_objective:DummyObjective, params: "
    "{params: 1}}\n          sensors: [myenv.5"
)


@pytest.mark.parametrize("driver", ["controller", "environment"])
@pytest.mark.parametrize("foreign", slow_after(["myenv.0", "myenv.99", "nowhere.0"]))
def test_a_setpoint_for_an_actuator_not_given_fails_the_run(
    workspace: Workspace, foreign: str, driver: str
) -> None:
    # the attacker owns myenv.5 ... myenv.9; myenv.0 is the defender's
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            _ATTACKER_MUSCLE,
            _ATTACKER_MUSCLE.replace(
                "palaestra.agent.dummy_muscle:DummyMuscle, params: {}",
                f"misbehaving:ForeignActuatorMuscle, params: {{extra: {foreign}}}",
            ),
        ),
        ("      simulation:\n", f"      simulation:\n        params: {{driver: {driver}}}\n"),
    )
    result = workspace.run("experiment-start", str(run_file), timeout=60)
    assert result.returncode == 1, result.stderr[-3000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    assert reason.startswith("Muscle-attacker-0: PluginContractError: ")
    assert "misbehaving:ForeignActuatorMuscle.propose_actions" in reason
    assert f"set actuator '{foreign}', which agent 'attacker' was not given" in reason
    assert reason.splitlines()[0] in result.stderr
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
