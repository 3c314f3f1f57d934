"""DummyObjective: the agent's objective is the sum of the newest environment rewards."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective, per_row


class DummyObjective(Objective):
    """``sum(memory.tail(1).rewards)``: a pass-through of the environment's rewards."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        return _total(memory.latest_rewards())

    def internal_rewards(self, memories: Sequence[Memory]) -> Sequence[float | None]:
        """:meth:`internal_reward` of each of a round's memories, in one call (a subclass's
        own ``internal_reward`` is called for each)."""
        if per_row(type(self)):  # (a subclass's own internal_reward)
            return super().internal_rewards(memories)
        return [_total(memory.latest_rewards()) for memory in memories]


def _total(rewards: list[float]) -> float:
    """The sum of ``rewards`` without NaNs (0.0 for none)."""
    if len(rewards) == 1:  # (the sum of one: itself, or none)
        reward = rewards[0]
        return reward + 0.0 if reward == reward else 0.0  # (fsum: -0.0 is 0.0)
    return math.fsum(r for r in rewards if r == r)  # NaN is not == NaN
