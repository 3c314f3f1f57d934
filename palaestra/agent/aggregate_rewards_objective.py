"""AggregateRewardsObjective: an agent's objective as an aggregate of named rewards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from palaestra.agent.memory import Memory
from palaestra.agent.objective import Objective

_AGGREGATIONS: dict[str, Callable[[np.ndarray], Any]] = {
    "sum": np.sum,
    "min": np.min,
    "max": np.max,
    "mean": np.mean,
}


class AggregateRewardsObjective(Objective):
    """The newest step's rewards named in ``rewards``, aggregated, times ``factor``.

    Args:
        rewards: The uid of one reward, or a list of them (as the environment names them).
        aggregation: ``sum`` (the default), ``min``, ``max`` or ``mean``, over the values of
            those rewards (a reward with several values counts each, and so does each of two
            rewards of one uid, from two environments that name a reward alike).
        factor: Multiplies the aggregate.

    As palaestrAI's, it keeps only the newest row of the Muscle's memory (it reads nothing
    older). A reward it names that the newest step lacks is an error naming it.
    """

    def __init__(
        self, rewards: str | Sequence[str], aggregation: str = "sum", factor: float = 1.0
    ) -> None:
        super().__init__({"rewards": rewards, "aggregation": aggregation, "factor": factor})
        if aggregation not in _AGGREGATIONS:
            raise ValueError(
                f"aggregation {aggregation!r} is not one of {', '.join(_AGGREGATIONS)}"
            )
        if isinstance(rewards, str):
            self._uids: tuple[str, ...] = (rewards,)
        elif isinstance(rewards, Sequence) and all(isinstance(r, str) for r in rewards):
            self._uids = tuple(rewards)
        else:
            raise TypeError(f"rewards must be a reward uid or a list of them, not {rewards!r}")
        self.rewards = rewards
        self.aggregation = aggregation
        self.factor = factor
        self._aggregate = _AGGREGATIONS[aggregation]

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        memory.truncate(1)
        newest = memory.tail(1).reward_information
        by_uid: dict[str, list[Any]] = {}  # (two environments may name a reward alike)
        for reward in newest[-1] if newest else ():
            by_uid.setdefault(str(reward.uid), []).append(reward.value)
        missing = [uid for uid in self._uids if uid not in by_uid]
        if missing:
            raise KeyError(
                f"no reward {', '.join(map(repr, missing))} in the newest step "
                f"(it has {sorted(by_uid) or 'none'})"
            )
        values = np.concatenate(
            [
                np.asarray(value, dtype=float).reshape(-1)
                for uid in self._uids
                for value in by_uid[uid]
            ]
        )
        return float(self._aggregate(values)) * float(self.factor)
