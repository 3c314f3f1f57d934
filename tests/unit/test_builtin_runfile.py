"""The run-file keys palaestra reads for palaestrAI's built-ins: an environment item's
``reward:`` and ``state_transformer:``, an agent's ``filters:``; and palaestrAI's
agent-evaluation termination condition, refused as a simulation condition."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.core.description.specs import ClassSpec
from palaestra.core.errors import RunFileError
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
        "palaestrai.experiment:AgentEvaluationObjectiveTerminationCondition",
        "palaestra.experiment:AgentEvaluationObjectiveTerminationCondition",
    ],
)
@pytest.mark.usefixtures("plugins")
def test_the_evaluation_condition_is_refused_as_a_simulation_condition(name: str) -> None:
    text = _with("          - name: rf_plugins:Condition\n", f"          - name: {name}\n")
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=True)
    error = caught.value
    assert error.key == "schedule[0].only_phase.simulation.conditions[0].name"
    assert "it is the run's condition" in error.message
    assert error.hint is not None and "run_config.condition" in error.hint


OBJECTIVE = "palaestrai.experiment:AgentObjectiveTerminationCondition"


def _objective_condition(params: str) -> str:
    return _with(
        "          - name: rf_plugins:Condition\n            params: {limit: 3}\n",
        f"          - name: {OBJECTIVE}\n            params: {params}\n",
    )


def test_brain_avg_rules_reach_the_agent() -> None:
    text = _objective_condition("{solo: {brain_avg10: 0.5, brain_avg3: 2, phase_avg5: 1.0}}")
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    assert phase.agents[0].objective_stop == {10: 0.5, 3: 2.0}


@pytest.mark.parametrize(
    ("params", "key", "message"),
    [
        ("{sole: {brain_avg3: 1}}", "sole", "unknown key 'sole'."),
        ("{solo: {brain_mean3: 1}}", "solo.brain_mean3", "unknown rule 'brain_mean3'"),
        ("{solo: {brain_avg0: 1}}", "solo.brain_avg0", "expected a number and N >= 1"),
        ("{solo: {brain_avg3: high}}", "solo.brain_avg3", "expected a number and N >= 1"),
        # a NaN threshold was taken: no mean reaches it, so the rule silently never fired
        ("{solo: {brain_avg3: .nan}}", "solo.brain_avg3", "expected a number and N >= 1"),
        ("{solo: {phase_avg3: .NaN}}", "solo.phase_avg3", "expected a number and N >= 1"),
        ("{solo: 3}", "solo", "expected a mapping like {brain_avg10: 0.9}"),
    ],
)
def test_bad_objective_rules_are_named(params: str, key: str, message: str) -> None:
    with pytest.raises(RunFileError) as caught:
        load_run_text(_objective_condition(params), path="run.yml", check_classes=False)
    prefix = "schedule[0].only_phase.simulation.conditions[0].params."
    assert caught.value.key == prefix + key
    assert caught.value.message.startswith(message)


def test_the_objective_condition_as_the_runs_condition_needs_a_phase_rule() -> None:
    text = MINIMAL + f"run_config:\n  condition:\n    name: {OBJECTIVE}\n"
    with pytest.raises(RunFileError) as caught:
        load_run_text(text, path="run.yml", check_classes=False)
    assert caught.value.key == "run_config.condition.name"
    assert caught.value.message == ("AgentObjectiveTerminationCondition names no phase_avgN rule.")
    assert caught.value.hint is not None and "phase_avgN" in caught.value.hint


def test_phase_avg_rules_of_the_runs_condition_reach_the_agent() -> None:
    text = MINIMAL + (
        f"run_config:\n  condition:\n    name: {OBJECTIVE}\n"
        "    params: {solo: {phase_avg4: 1.5, brain_avg2: 9}}\n"
    )
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    assert phase.agents[0].phase_stop == {4: 1.5}
    assert phase.agents[0].objective_stop == {}  # brain_avgN is not read there (palaestrAI)
    with pytest.raises(RunFileError) as caught:
        load_run_text(text.replace("solo:", "sole:"), path="run.yml", check_classes=False)
    assert caught.value.key == "run_config.condition.params.sole"
