"""``palaestrai.simulation.vanilla_sim_controller``."""

from palaestra.simulation.vanilla import Vanilla, VanillaSimController, VanillaSimulationController

__all__ = ["Vanilla", "VanillaSimController", "VanillaSimulationController"]
