"""``palaestrai.simulation.taking_turns_simulation_controller``."""

from palaestra.simulation.taking_turns import TakingTurns, TakingTurnsSimulationController

__all__ = ["TakingTurns", "TakingTurnsSimulationController"]
