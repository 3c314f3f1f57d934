"""Plug-ins for the benchmarks: a DummyEnvironment that reports when it stepped.

``TimedEnvironment`` behaves like ``DummyEnvironment`` and also keeps, in memory, the
``time.time()`` of its first and last ``update()`` and of every ``mark_every``-th one. At the
episode's last step it writes them once, as JSON, to ``<timing_file>.<worker>.json`` (one file
per rollout worker), so a run costs one small write per worker and episode, never one per step.
Load it as ``plugins:TimedEnvironment`` with ``benchmarks/`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palaestra.core.information import ActuatorInformation
from palaestra.environment import DummyEnvironment


class TimedEnvironment(DummyEnvironment):
    """DummyEnvironment plus timestamps of its steps.

    Args:
        timing_file: Path prefix of the JSON file written at the last step ("" writes nothing).
        mark_every: Keep a ``(step, time)`` mark every this many steps, for rates over parts
            of the episode.
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        discrete: bool = True,
        max_iter: int = 10,
        step_delay: float = 0.0,
        timing_file: str = "",
        mark_every: int = 1000,
    ) -> None:
        super().__init__(uid, broker_uri, seed, discrete, max_iter, step_delay)
        self.timing_file = timing_file
        self.mark_every = max(1, int(mark_every))
        self.steps = 0
        self.first = 0.0
        self.marks: list[tuple[int, float]] = []

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        now = time.time()
        self.steps += 1
        if self.steps == 1:
            self.first = now
            self.marks.append((1, now))
        elif self.steps % self.mark_every == 0:
            self.marks.append((self.steps, now))
        state = super().update(actuators)
        if state[2]:
            self._write(now)
        return state

    def _write(self, last: float) -> None:
        if self.marks[-1][0] != self.steps:
            self.marks.append((self.steps, last))
        if not self.timing_file:
            return
        worker = self.context.worker if self.context is not None else 0
        record = {
            "worker": worker,
            "steps": self.steps,
            "first": self.first,
            "last": last,
            "marks": self.marks,
        }
        game = f"{id(self):x}"  # a worker's games (envs_per_worker) are instances in a process
        Path(f"{self.timing_file}.{worker}.{game}.json").write_text(json.dumps(record))
