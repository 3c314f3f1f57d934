"""``palaestrai.simulation.simulation_controller``: palaestra's SimulationController."""

from palaestra.simulation.controller import SimulationController

__all__ = ["SimulationController"]
