"""``palaestrai.simulation.vanilla_simcontroller_termination_condition``."""

from palaestra.simulation.termination import VanillaSimControllerTerminationCondition

__all__ = ["VanillaSimControllerTerminationCondition"]
