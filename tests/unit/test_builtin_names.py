"""Each built-in palaestra adds for palaestrAI's run files loads under its palaestra name and,
through the compat finder, under palaestrAI's (the same class)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import pytest

from palaestra.compat import finder
from palaestra.core.description.loading import load_class

BUILTINS = (
    "palaestra.agent.none_brain:NoneBrain",
    "palaestra.agent:NoneBrain",
    "palaestra.agent.aggregate_rewards_objective:AggregateRewardsObjective",
    "palaestra.agent:AggregateRewardsObjective",
    "palaestra.agent.checkpointable_brain:CheckpointableBrain",
    "palaestra.agent:CheckpointableBrain",
    "palaestra.agent.filter:Filter",
    "palaestra.agent:Filter",
    "palaestra.agent.filters.absolute_deviation_filter:AbsoluteDeviationFilter",
    "palaestra.agent.filters.action_time_shift_filter:ActionTimeShiftFilter",
    "palaestra.agent.filters.delta_action_filter:DeltaActionFilter",
    "palaestra.agent.filters.delta_obs_filter:DeltaObsFilter",
    "palaestra.agent.filters.delta_step_filter:DeltaStepFilter",
    "palaestra.agent.filters.merge_steps_filter:MergeStepsFilter",
    "palaestra.agent.filters.normalization_filter:NormFilter",
    "palaestra.agent.filters.quadratic_penalty_filter:QuadraticPenaltyFilter",
    "palaestra.agent.filters:Norm",
    "palaestra.agent.filters:MergeSteps",
    "palaestra.agent:NormFilter",
    "palaestra.agent:ActionTimeShiftFilter",
    "palaestra.environment.reward:Reward",
    "palaestra.environment:Reward",
    "palaestra.environment.environment_state_transformer:EnvironmentStateTransformer",
    "palaestra.environment:EnvironmentStateTransformer",
    "palaestra.experiment:AgentObjectiveTerminationCondition",
    "palaestra.experiment.agent_objective_termination_condition:AgentObjectiveTerminationCondition",
)


def _forget_palaestrai() -> None:
    for name in [n for n in sys.modules if n == "palaestrai" or n.startswith("palaestrai.")]:
        del sys.modules[name]


@pytest.fixture
def mapped() -> Iterator[None]:
    meta_path, path = list(sys.meta_path), list(sys.path)
    _forget_palaestrai()
    finder.install()
    yield
    sys.meta_path[:] = meta_path
    sys.path[:] = path
    _forget_palaestrai()
    importlib.invalidate_caches()


@pytest.mark.parametrize("name", BUILTINS)
def test_a_builtin_loads_under_both_names(mapped: None, name: str) -> None:
    ours = load_class(name)
    assert load_class(name.replace("palaestra.", "palaestrai.", 1)) is ours
