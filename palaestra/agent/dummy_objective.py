"""DummyObjective: the agent's objective is the sum of the newest environment rewards."""

from __future__ import annotations

from typing import Any

import numpy as np

from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective


class DummyObjective(Objective):
    """``sum(memory.tail(1).rewards)``: a pass-through of the environment's rewards."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        rewards = memory.tail(1).rewards
        if rewards.size == 0:
            return 0.0
        return float(np.nansum(rewards, axis=1)[0])
