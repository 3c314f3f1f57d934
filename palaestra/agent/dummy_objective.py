"""DummyObjective: the agent's objective is the sum of the newest environment rewards."""

from __future__ import annotations

import math
from typing import Any

from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective


class DummyObjective(Objective):
    """``sum(memory.tail(1).rewards)``: a pass-through of the environment's rewards."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        rewards = memory.latest_rewards()
        if len(rewards) == 1:  # (the sum of one: itself, or none)
            reward = rewards[0]
            return reward + 0.0 if reward == reward else 0.0  # (fsum: -0.0 is 0.0)
        return math.fsum(r for r in rewards if r == r)  # NaN is not == NaN
