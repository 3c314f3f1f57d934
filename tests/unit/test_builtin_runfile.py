"""The run-file keys palaestra reads for palaestrAI's built-ins: an environment item's
``reward:`` and ``state_transformer:``, an agent's ``filters:``; and palaestrAI's
agent-objective termination conditions, refused with what to use instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.core.errors import RunFileError
from palaestra.core.specs import ClassSpec
from palaestra.experiment.runfile import load_run_text
from tests.unit.test_runfile import plugin_dir, plugins  # noqa: F401 - fixtures

MINIMAL = (Path(__file__).parent / "fixtures" / "runfiles" / "minimal.yml").read_text()


def _with(old: str, new: str) -> str:
    assert MINIMAL.count(old) == 1, old
    return MINIMAL.replace(old, new)


def test_reward_state_transformer_and_filters_reach_the_specs() -> None:
    text = _with(
        "            name: rf_plugins:Env\n",
        "            name: rf_plugins:Env\n"
        "          reward: {name: my.rewards:Score, params: {scale: 2}}\n"
        "          state_transformer: {name: my.transformers:Scale}\n",
    )
    text = text.replace(
        "          load: null\n",
        "          load: null\n"
        "          filters:\n"
        "            - {name: palaestra.agent:MergeStepsFilter, params: {steps: 2}}\n"
        "            - name: palaestra.agent:DeltaActionFilter\n",
    )
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    (env,) = phase.environments
    assert env.reward == ClassSpec(name="my.rewards:Score", params={"scale": 2})
    assert env.state_transformer == ClassSpec(name="my.transformers:Scale", params={})
    assert phase.agents[0].filters == (
        ClassSpec(name="palaestra.agent:MergeStepsFilter", params={"steps": 2}),
        ClassSpec(name="palaestra.agent:DeltaActionFilter", params={}),
    )


def test_without_the_keys_nothing_is_added() -> None:
    (phase,) = load_run_text(MINIMAL, path="run.yml", check_classes=False).phases
    assert phase.environments[0].reward is None
    assert phase.environments[0].state_transformer is None
    assert phase.agents[0].filters == ()


@pytest.mark.usefixtures("plugins")
def test_a_filter_that_is_not_a_filter_is_refused() -> None:
    text = _with(
        "          load: null\n",
        "          load: null\n          filters: [{name: palaestra.agent:NoneBrain}]\n",
    )
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=True)
    assert caught.value.key == "schedule[0].only_phase.agents[0].filters[0].name"
    assert "is not a subclass of 'palaestra.agent.filter:Filter'" in caught.value.message


@pytest.mark.parametrize(
    "name",
    [
        "palaestrai.experiment:AgentObjectiveTerminationCondition",
        "palaestra.experiment:AgentEvaluationObjectiveTerminationCondition",
    ],
)
@pytest.mark.usefixtures("plugins")
def test_the_agent_objective_conditions_are_refused_saying_what_to_use(name: str) -> None:
    text = _with("          - name: rf_plugins:Condition\n", f"          - name: {name}\n")
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=True)
    error = caught.value
    assert error.key == "schedule[0].only_phase.simulation.conditions[0].name"
    assert error.message == f"palaestra does not offer palaestrAI's '{name}' yet."
    assert error.hint is not None and "MaxEpisodesTerminationCondition" in error.hint
