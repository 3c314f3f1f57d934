"""TakingTurns: one agent acts per environment step, in the order of the run file."""

from __future__ import annotations

from palaestra.core.turns import RoundRobin
from palaestra.simulation.controller import SimulationController


class TakingTurns(SimulationController):
    """Agent ``i`` acts on steps ``i, i + n, ...``; its rewards are those of the step that
    followed its own action (:class:`~palaestra.core.turns.RoundRobin`)."""

    policy = RoundRobin


TakingTurnsSimulationController = TakingTurns
