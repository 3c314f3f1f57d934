"""Vanilla: every agent acts on the same observation, then the world steps once."""

from __future__ import annotations

from palaestra.core.turns import AllAct
from palaestra.simulation.controller import SimulationController


class Vanilla(SimulationController):
    """Every agent acts on every step (:class:`~palaestra.core.turns.AllAct`)."""

    policy = AllAct


VanillaSimulationController = Vanilla
VanillaSimController = Vanilla
