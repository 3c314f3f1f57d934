"""palaestrAI's built-in agent filters (named in an agent's ``filters:``)."""

from palaestra.agent.filters.absolute_deviation_filter import AbsoluteDeviationFilter
from palaestra.agent.filters.action_time_shift_filter import ActionTimeShiftFilter
from palaestra.agent.filters.delta_action_filter import DeltaActionFilter
from palaestra.agent.filters.delta_obs_filter import DeltaObsFilter
from palaestra.agent.filters.delta_step_filter import DeltaStepFilter
from palaestra.agent.filters.merge_steps_filter import MergeStepsFilter
from palaestra.agent.filters.normalization_filter import NormFilter
from palaestra.agent.filters.quadratic_penalty_filter import QuadraticPenaltyFilter

Norm = NormFilter
DeltaStep = DeltaStepFilter
MergeSteps = MergeStepsFilter
DeltaObs = DeltaObsFilter

__all__ = [
    "AbsoluteDeviationFilter",
    "ActionTimeShiftFilter",
    "DeltaActionFilter",
    "DeltaObs",
    "DeltaObsFilter",
    "DeltaStep",
    "DeltaStepFilter",
    "MergeSteps",
    "MergeStepsFilter",
    "Norm",
    "NormFilter",
    "QuadraticPenaltyFilter",
]
