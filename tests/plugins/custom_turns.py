"""A simulation controller with a turn policy of its own: the agents take turns backwards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from palaestra.core.turns import TurnPolicy
from palaestra.simulation import SimulationController

A = TypeVar("A")


class Backwards(TurnPolicy):
    """The last agent of the run file acts first, then the one before it, and so on."""

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:  # type: ignore[override]
        return [agents[-1 - step % len(agents)]]


class BackwardsTurns(SimulationController):
    policy = Backwards
