"""A Muscle's objective rules: whether its agent's last objective values end the episode."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping


class ObjectiveStop:
    """``rules[N] = X``: reached once the mean of the last ``N`` objective values (kept
    across episodes, as palaestrAI's Brain memory keeps them) is at least ``X``. A value
    that is NaN (no objective) makes the means that include it NaN, which reach nothing."""

    def __init__(self, rules: Mapping[int, float]) -> None:
        self.rules = sorted(rules.items())
        self.values: deque[float] = deque(maxlen=max(rules))

    def reached(self, objective: float) -> bool:
        values = self.values
        values.append(objective)
        for window, threshold in self.rules:  # (N >= 1: the run file's check)
            if window <= len(values) and sum(list(values)[-window:]) / window >= threshold:
                return True
        return False
