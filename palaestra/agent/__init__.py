"""Agents: the Brain, Muscle and Objective plug-in contracts, built-ins, and their processes."""

from palaestra.agent.aggregate_rewards_objective import AggregateRewardsObjective
from palaestra.agent.brain import Brain
from palaestra.agent.brain_dumper import BrainDumper
from palaestra.agent.checkpointable_brain import CheckpointableBrain
from palaestra.agent.context import BrainContext, BrainDumps, MuscleContext
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.agent.dummy_objective import DummyObjective
from palaestra.agent.evaluation_result import EvaluationResult
from palaestra.agent.filter import Filter
from palaestra.agent.filters import (
    AbsoluteDeviationFilter,
    ActionTimeShiftFilter,
    DeltaActionFilter,
    DeltaObsFilter,
    DeltaStepFilter,
    MergeStepsFilter,
    NormFilter,
    QuadraticPenaltyFilter,
)
from palaestra.agent.memory import Memory, MemoryShard
from palaestra.agent.muscle import Muscle
from palaestra.agent.none_brain import NoneBrain
from palaestra.agent.objective import Objective
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation

__all__ = [
    "AbsoluteDeviationFilter",
    "ActionTimeShiftFilter",
    "ActuatorInformation",
    "AggregateRewardsObjective",
    "Brain",
    "BrainContext",
    "BrainDumper",
    "BrainDumps",
    "CheckpointableBrain",
    "DeltaActionFilter",
    "DeltaObsFilter",
    "DeltaStepFilter",
    "DummyBrain",
    "DummyMuscle",
    "DummyObjective",
    "EvaluationResult",
    "Filter",
    "Memory",
    "MergeStepsFilter",
    "MemoryShard",
    "Muscle",
    "MuscleContext",
    "NoneBrain",
    "NormFilter",
    "Objective",
    "QuadraticPenaltyFilter",
    "RewardInformation",
    "SensorInformation",
]
