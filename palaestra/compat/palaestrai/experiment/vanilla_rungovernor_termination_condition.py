"""``palaestrai.experiment.vanilla_rungovernor_termination_condition``."""

from palaestra.experiment.termination import VanillaRunGovernorTerminationCondition

__all__ = ["VanillaRunGovernorTerminationCondition"]
