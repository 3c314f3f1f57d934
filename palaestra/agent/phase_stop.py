"""A Brain's phase rules (``phase_avgN``): whether its agent's objective ends the phase.

palaestrAI 3.5.18's AgentObjectiveTerminationCondition, as the run's condition: at the end of
each episode of a worker, the Brain's average objective (the mean over its whole memory: every
worker's steps it keeps) is appended to that worker's window; the phase ends once the mean of
a worker's last ``N`` such averages reaches ``X`` (``phase_avgN: X``), for that worker and, at
the end of their running episodes, for all others.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

LOG = logging.getLogger(__name__)


class PhaseStop:
    """``rules[N] = X`` of one agent; :attr:`reached` once one holds (it stays so)."""

    def __init__(self, name: str, rules: Mapping[int, float]) -> None:
        self.name = name
        self.rules = sorted(rules.items())
        self.window = max(rules)
        self.averages: dict[int, deque[float]] = {}
        self.reached = False

    def episode_ended(self, worker: int, memory: Any) -> bool:
        """Note the end of an episode of ``worker``; whether the phase is to end."""
        if self.reached:
            return True
        objective = np.asarray(memory.tail(len(memory)).objective, dtype=np.float64)
        finite = objective[np.isfinite(objective)]
        average = float(finite.mean()) if finite.size else float("nan")
        averages = self.averages.setdefault(worker, deque(maxlen=self.window))
        averages.append(average)
        for window, threshold in self.rules:
            if len(averages) >= window:
                mean = sum(list(averages)[-window:]) / window
                if mean >= threshold:
                    LOG.info(
                        "%s: the mean of the average objective over worker %d's last %d "
                        "episodes is %.4g >= %.4g (phase_avg%d): the phase ends",
                        self.name,
                        worker,
                        window,
                        mean,
                        threshold,
                        window,
                    )
                    self.reached = True
                    return True
        return False
