"""Simulation controllers (who acts when) and their termination condition."""

from palaestra.simulation.controller import SimulationController
from palaestra.simulation.taking_turns import TakingTurns, TakingTurnsSimulationController
from palaestra.simulation.termination import VanillaSimControllerTerminationCondition
from palaestra.simulation.vanilla import Vanilla, VanillaSimController, VanillaSimulationController

__all__ = [
    "SimulationController",
    "TakingTurns",
    "TakingTurnsSimulationController",
    "Vanilla",
    "VanillaSimController",
    "VanillaSimControllerTerminationCondition",
    "VanillaSimulationController",
]
