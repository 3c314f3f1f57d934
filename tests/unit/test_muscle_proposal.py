"""What a Muscle's ``propose_actions`` may return (palaestra.agent.muscle.proposal): a pair
(set points, data for the Brain), or the set points alone as palaestrAI takes them; and what an
Objective's ``internal_reward`` may (a number or None). Anything else names the plug-in, what
it returned and the contract."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.agent.dummy_objective import DummyObjective
from palaestra.agent.muscle import proposal
from palaestra.agent.objective import objective_value
from palaestra.core.information import ActuatorInformation
from palaestra.core.plugin import PluginContractError
from palaestra.core.spaces import Discrete

SET = [ActuatorInformation(3, Discrete(5), "env.0")]


@pytest.mark.parametrize(
    ("returned", "setpoints", "data"),
    [((SET, {"x": 1}), SET, {"x": 1}), (SET, SET, None), ([], [], None), (([], None), [], None)],
)
def test_a_pair_or_the_set_points_alone(returned: Any, setpoints: Any, data: Any) -> None:
    assert proposal(DummyMuscle(), returned) == (setpoints, data)


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ((SET, 1, 2), "returned a tuple of 3 items"),
        ({"env.0": 3}, "returned dict {'env.0': 3} as its set points"),
        (None, "returned NoneType None as its set points"),
        ((3, None), "returned int 3 as its set points"),
    ],
)
def test_anything_else_names_the_muscle_and_the_contract(returned: Any, said: str) -> None:
    with pytest.raises(PluginContractError) as caught:
        proposal(DummyMuscle(), returned)
    text = str(caught.value)
    assert text.startswith("palaestra.agent.dummy_muscle:DummyMuscle.propose_actions ")
    assert said in text
    assert "expected the set points (the actuators it was given, each set" in text


@pytest.mark.parametrize(
    ("returned", "expected"),
    [(1, 1.0), (0.5, 0.5), (np.float32(2.0), 2.0), (np.array([3.0]), 3.0), (None, None)],
)
def test_an_objective_is_a_number_or_none(returned: Any, expected: float | None) -> None:
    value = objective_value(DummyObjective(), returned)
    assert math.isnan(value) if expected is None else value == expected


@pytest.mark.parametrize(
    "returned",
    ["high", [1.0, 2.0], {"r": 1.0}, "1.5", "nan", b"1", np.str_("2"), np.array(["3"])],
)
def test_anything_else_as_an_objective_names_the_objective(returned: Any) -> None:
    """A text that spells a number ("1.5", b"1", "nan") was stored as that number, and the
    run finished (exit 0): an Objective returning ``str(reward)`` went unnoticed."""
    with pytest.raises(PluginContractError) as caught:
        objective_value(DummyObjective(), returned)
    text = str(caught.value)
    assert text.startswith("palaestra.agent.dummy_objective:DummyObjective.internal_reward ")
    assert f"returned {type(returned).__name__} " in text
    assert "expected a number (an int, a float, a numpy scalar or one-element array)" in text
