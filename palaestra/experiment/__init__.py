"""Experiments: run files, the ExperimentRun controller, the executor, run-level conditions."""

from palaestra.experiment.evaluation import AgentEvaluationObjectiveTerminationCondition
from palaestra.experiment.termination import (
    AgentObjectiveTerminationCondition,
    EnvironmentTerminationCondition,
    MaxEpisodesTerminationCondition,
    VanillaRunGovernorTerminationCondition,
)

__all__ = [
    "AgentEvaluationObjectiveTerminationCondition",
    "AgentObjectiveTerminationCondition",
    "EnvironmentTerminationCondition",
    "MaxEpisodesTerminationCondition",
    "VanillaRunGovernorTerminationCondition",
]
