"""The rules of AgentEvaluationObjectiveTerminationCondition (palaestrAI 3.5.18's), applied to
the Brains' evaluation results as the simulation controller hands them over."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from palaestra.agent import DummyBrain
from palaestra.agent.evaluation_result import EvaluationResult, evaluated
from palaestra.core.description.specs import COUNT_MAX, PhaseConfig
from palaestra.core.errors import RunFileError
from palaestra.core.wire import messages as m
from palaestra.experiment import AgentEvaluationObjectiveTerminationCondition as Condition
from palaestra.experiment.evaluation import RuleError, evaluations
from palaestra.experiment.runfile import load_run_text
from tests.unit.test_compat import clean, mapped  # noqa: F401 - fixtures

FIXTURES = Path(__file__).parent / "fixtures" / "runfiles"


def success(threshold: float = 0.5, consecutive: int = 2, minimum: int = 1, **more: Any) -> dict:
    rule = {
        "metric": "score",
        "threshold": threshold,
        "direction": "greater_equal",
        "consecutive": consecutive,
        "min_evaluations": minimum,
    }
    return {**rule, **more}


def plateau(delta: float = 0.1, patience: int = 2, minimum: int = 1, window: int = 1) -> dict:
    return {
        "metric": "score",
        "direction": "maximize",
        "min_delta": delta,
        "patience": patience,
        "min_evaluations": minimum,
        "window": window,
    }


def feed(condition: Condition, *scores: float | None, agent: str = "a") -> list[bool]:
    """Hand the condition one result per score (None: evaluate_rollouts returned None);
    whether the phase ends after each."""
    ends = []
    for evaluation, score in enumerate(scores):
        result = None if score is None else EvaluationResult(metrics={"score": score})
        ends.append(condition.evaluation_done(evaluation, [evaluated(agent, evaluation, result)]))
    return ends


def test_success_after_the_consecutive_passing_results() -> None:
    condition = Condition(agents={"a": {"success": success(consecutive=2)}})
    assert feed(condition, 0.1, 0.6, 0.7) == [False, False, True]
    assert condition.reason == "success"


def test_a_failing_result_restarts_the_streak() -> None:
    condition = Condition(agents={"a": {"success": success(consecutive=2)}})
    assert feed(condition, 0.6, 0.4, 0.6, 0.6) == [False, False, False, True]


def test_success_waits_for_min_evaluations_valid_results() -> None:
    condition = Condition(agents={"a": {"success": success(consecutive=1, minimum=3)}})
    assert feed(condition, 0.9, 0.9, 0.9) == [False, False, True]


def test_less_equal_passes_at_or_below_the_threshold() -> None:
    rule = success(threshold=0.2, consecutive=1, direction="less_equal")
    condition = Condition(agents={"a": {"success": rule}})
    assert feed(condition, 0.3, 0.2) == [False, True]


@pytest.mark.parametrize("invalid", [math.nan, math.inf, None])
def test_an_invalid_result_resets_the_streak(invalid: float | None) -> None:
    condition = Condition(agents={"a": {"success": success(consecutive=2)}})
    assert feed(condition, 0.6, invalid, 0.6, 0.6) == [False, False, False, True]


def test_a_non_finite_metric_never_counts_as_success() -> None:
    rule = success(threshold=0.0, consecutive=1, direction="less_equal")
    condition = Condition(agents={"a": {"success": rule}})
    assert feed(condition, -math.inf, -math.inf, math.nan) == [False, False, False]
    assert condition.reason is None


def test_a_missing_metric_is_invalid() -> None:
    condition = Condition(agents={"a": {"success": success(consecutive=1)}})
    other = evaluated("a", 0, EvaluationResult(metrics={"loss": 1.0}))
    assert not condition.evaluation_done(0, [other])
    assert condition.records["a"].valid == 0


def test_plateau_after_patience_results_without_improvement() -> None:
    condition = Condition(agents={"a": {"plateau": plateau(delta=0.1, patience=2)}})
    assert feed(condition, 1.0, 1.05, 1.09) == [False, False, True]
    assert condition.reason == "plateau"


def test_an_improvement_clears_the_patience() -> None:
    condition = Condition(agents={"a": {"plateau": plateau(delta=0.1, patience=2)}})
    assert feed(condition, 1.0, 1.05, 1.2, 1.25, 1.29) == [False, False, False, False, True]


def test_minimize_improves_downwards() -> None:
    rule = {**plateau(delta=0.1, patience=1), "direction": "minimize"}
    condition = Condition(agents={"a": {"plateau": rule}})
    assert feed(condition, 1.0, 0.8, 0.75) == [False, False, True]


def test_patience_counts_only_from_min_evaluations_valid_results() -> None:
    condition = Condition(agents={"a": {"plateau": plateau(patience=1, minimum=3)}})
    assert feed(condition, 1.0, 1.0, 1.0) == [False, False, True]


def test_the_plateau_compares_the_mean_of_the_window() -> None:
    """Means of the last two: -, 1.5, 1.5 (no improvement), 2.5 (improvement), 2.5, 2.5."""
    condition = Condition(agents={"a": {"plateau": plateau(delta=0.1, patience=2, window=2)}})
    ends = feed(condition, 1.0, 2.0, 1.0, 4.0, 1.0, 4.0)
    assert ends == [False, False, False, False, False, True]


def test_an_invalid_result_neither_counts_towards_nor_clears_a_plateau() -> None:
    condition = Condition(agents={"a": {"plateau": plateau(delta=0.1, patience=2)}})
    assert feed(condition, 1.0, 1.0, math.nan, None, 1.0) == [False, False, False, False, True]
    assert condition.records["a"].valid == 3


def test_success_is_checked_before_plateau() -> None:
    rules = {"success": success(threshold=1.0, consecutive=2), "plateau": plateau(patience=1)}
    condition = Condition(agents={"a": rules})
    assert feed(condition, 1.0, 1.0) == [False, True]
    assert condition.reason == "success"


def test_every_agent_must_reach_its_rule() -> None:
    rule = {"success": success(consecutive=1)}
    condition = Condition(agents={"a": rule, "b": rule})
    good, bad = EvaluationResult(metrics={"score": 1.0}), EvaluationResult(metrics={"score": 0})
    assert not condition.evaluation_done(0, [evaluated("a", 0, good), evaluated("b", 0, bad)])
    assert not condition.evaluation_done(1, [evaluated("a", 1, good)])  # b's missing: reset
    assert condition.evaluation_done(2, [evaluated("a", 2, good), evaluated("b", 2, good)])


def test_the_phase_episodes_stay_the_bound() -> None:
    condition = Condition(agents={"a": {"success": success()}})
    assert not condition.phase_done(3, 4)
    assert condition.phase_done(4, 4)
    assert condition.reason == "max_episodes"


@pytest.mark.parametrize(
    ("agents", "key"),
    [
        ({}, "agents"),
        ({"a": {}}, "agents.a"),
        ({"a": {"succes": success()}}, "agents.a.succes"),
        ({"a": {"success": success(threshold=math.inf)}}, "agents.a.success.threshold"),
        ({"a": {"success": success(consecutive=0)}}, "agents.a.success.consecutive"),
        ({"a": {"success": success(direction="up")}}, "agents.a.success.direction"),
        ({"a": {"success": success(extra=1)}}, "agents.a.success"),
        ({"a": {"plateau": plateau(delta=-1)}}, "agents.a.plateau.min_delta"),
        ({"a": {"plateau": plateau(window=0)}}, "agents.a.plateau.window"),
        ({"a": {"success": success()}, "b": {"plateau": plateau()}}, "agents.b"),
    ],
)
def test_malformed_rules_are_named(agents: dict, key: str) -> None:
    with pytest.raises(RuleError) as caught:
        Condition(agents=agents)
    assert caught.value.key == key


def test_results_carry_numbers_only() -> None:
    result = EvaluationResult(
        metrics={"np": np.float32(0.5), "int": 3, "text": "high", "none": None},  # type: ignore[dict-item]
        checkpoint_id="c1",
    )
    message = m.decode(m.encode(evaluated("a", 4, result)))
    assert isinstance(message, m.AgentEvaluated)
    assert message.metrics == {"np": 0.5, "int": 3.0, "text": None, "none": None}
    assert (message.evaluation, message.checkpoint_id, message.result) == (4, "c1", True)


def test_evaluations_run_with_one_worker_only() -> None:
    assert evaluations(PhaseConfig(worker=1, evaluate_every=3)) == 3
    assert evaluations(PhaseConfig(worker=2, evaluate_every=3)) == 0


RUN_CONFIG = """\
run_config:
  condition:
    name: palaestra.experiment:AgentEvaluationObjectiveTerminationCondition
    params:
      agents:
        solo: RULES
"""


def run_text(config: str, rules: str) -> str:
    text = (FIXTURES / "minimal.yml").read_text()
    old = "        mode: Train\n        worker: 2\n        episodes: null\n"
    assert old in text
    return text.replace(old, config) + RUN_CONFIG.replace("RULES", rules)


SUCCESS_RULES = (
    "{success: {metric: score, threshold: 1, direction: greater_equal, consecutive: 1, "
    "min_evaluations: 1}}"
)


def test_the_run_file_gives_evaluate_every_to_the_phase() -> None:
    text = run_text("        worker: 1\n        evaluate_every: 3\n", SUCCESS_RULES)
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    assert phase.config.evaluate_every == 3
    assert evaluations(phase.config) == 3


def test_a_test_phase_does_not_inherit_evaluations_unless_it_sets_them() -> None:
    # (inherited, they played evaluation rollouts between its test episodes and the condition
    # ended it after 6 of its 10 episodes, exit 0)
    text = run_text("        worker: 1\n        evaluate_every: 2\n", SUCCESS_RULES)
    at = text.index("run_config:")
    later = (
        "  - testing:\n      phase_config: {mode: test, episodes: 10}\n"
        "  - retraining:\n      phase_config: {mode: train}\n"
        "  - own:\n      phase_config: {mode: test, evaluate_every: 3}\n"
    )
    text = text[:at] + later + text[at:]

    phases = load_run_text(text, path="run.yml", check_classes=False).phases

    assert [p.config.evaluate_every for p in phases] == [2, 0, 2, 3]
    assert [p.config.mode for p in phases] == ["train", "test", "train", "test"]


def test_a_train_phase_without_episodes_ends_by_the_rules_alone() -> None:
    text = run_text("        worker: 1\n        evaluate_every: 2\n", SUCCESS_RULES)
    (phase,) = load_run_text(text, path="run.yml", check_classes=False).phases
    assert phase.config.episodes == COUNT_MAX


@pytest.mark.parametrize(
    ("config", "rules", "key"),
    [
        (
            "        mode: test\n        worker: 1\n        episodes: null\n",
            SUCCESS_RULES,
            "schedule[0].only_phase.phase_config.episodes",
        ),
        (
            "        worker: 1\n",
            SUCCESS_RULES,
            "schedule[0].only_phase.phase_config.evaluate_every",
        ),
        (
            "        worker: 2\n        evaluate_every: 1\n",
            SUCCESS_RULES,
            "schedule[0].only_phase.phase_config.worker",
        ),
        (
            "        worker: 1\n        evaluate_every: 1\n",
            SUCCESS_RULES.replace("consecutive: 1", "consecutive: two"),
            "run_config.condition.params.agents.solo.success.consecutive",
        ),
    ],
)
def test_the_run_file_is_refused_naming_the_key(config: str, rules: str, key: str) -> None:
    with pytest.raises(RunFileError) as caught:
        load_run_text(run_text(config, rules), path="run.yml", check_classes=False)
    assert caught.value.key == key
    assert caught.value.exit_code == 2


@pytest.mark.usefixtures("mapped")
def test_palaestrais_names_are_palaestras() -> None:
    from palaestrai.agent import EvaluationResult as PaiResult
    from palaestrai.agent.evaluation_result import EvaluationResult as PaiResultFromModule
    from palaestrai.experiment import AgentEvaluationObjectiveTerminationCondition as PaiCondition
    from palaestrai.experiment.agent_evaluation_objective_termination_condition import (
        AgentEvaluationObjectiveTerminationCondition as PaiConditionFromModule,
    )

    assert PaiResult is PaiResultFromModule is EvaluationResult
    assert PaiCondition is PaiConditionFromModule is Condition


def test_a_brain_returns_no_result_by_default() -> None:
    brain = DummyBrain()
    assert brain.evaluate_rollouts("run", "instance", 0, "a", episode=0) is None
