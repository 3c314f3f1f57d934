"""DummyObjective: the agent's objective is the sum of the newest environment rewards."""

from __future__ import annotations

import math
from typing import Any

from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective


class DummyObjective(Objective):
    """``sum(memory.tail(1).rewards)``: a pass-through of the environment's rewards."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        return math.fsum(r for r in memory.latest_rewards() if r == r)  # NaN is not == NaN
