"""Experiments: run files, the ExperimentRun controller, the executor, run-level conditions."""

from palaestra.experiment.termination import (
    EnvironmentTerminationCondition,
    MaxEpisodesTerminationCondition,
    VanillaRunGovernorTerminationCondition,
)

__all__ = [
    "EnvironmentTerminationCondition",
    "MaxEpisodesTerminationCondition",
    "VanillaRunGovernorTerminationCondition",
]
