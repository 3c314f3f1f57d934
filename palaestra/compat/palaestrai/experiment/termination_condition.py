"""``palaestrai.experiment.termination_condition``."""

from palaestra.core.termination import TerminationCondition

__all__ = ["TerminationCondition"]
