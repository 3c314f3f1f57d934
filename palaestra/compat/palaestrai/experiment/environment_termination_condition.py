"""``palaestrai.experiment.environment_termination_condition``."""

from palaestra.experiment.termination import EnvironmentTerminationCondition

__all__ = ["EnvironmentTerminationCondition"]
