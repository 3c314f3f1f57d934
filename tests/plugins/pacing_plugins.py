"""Plug-ins for the tests and the benchmark of real-time pacing and ``update_lag: async``
(tests/system/test_pacing.py, benchmarks/pacing.py).

:class:`ClockEnvironment` records (``context.record("began", ...)``, so the store has it) the
``time.perf_counter()`` at which each of its steps began, and can be slow once;
:class:`SlowBrain` is a DummyBrain that blocks in ``thinking`` (every N-th call, or on the
calls listed) and can fail on a call; :class:`SlowMuscle` a DummyMuscle slow to act once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import ActuatorInformation
from palaestra.environment import DummyEnvironment


class ClockEnvironment(DummyEnvironment):
    """DummyEnvironment that records when each step began; step ``slow_at`` (1-based, 0:
    none) of every episode takes ``slow_seconds`` longer; ``stepped_file`` (if given) is
    created at the first step."""

    def __init__(
        self, slow_at: int = 0, slow_seconds: float = 0.0, stepped_file: str = "", **params: Any
    ) -> None:
        super().__init__(**params)
        self.slow_at = slow_at
        self.slow_seconds = slow_seconds
        self.stepped_file = stepped_file

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        began = time.perf_counter()
        context = self.context
        if context is not None:
            context.record("began", began)
        if self.stepped_file and self.iter == 0:
            Path(self.stepped_file).touch()
        if self.iter + 1 == self.slow_at:
            time.sleep(self.slow_seconds)  # the simulation itself is slow this once
        return super().update(actuators)


class SlowBrain(DummyBrain):
    """A DummyBrain whose ``thinking`` blocks ``seconds`` on every ``every``-th call (0:
    never) and on each call in ``calls`` (counted from 1 over the phase), and raises on call
    ``fail_at`` (0: never)."""

    def __init__(
        self,
        every: int = 0,
        seconds: float = 0.0,
        calls: Sequence[int] = (),
        fail_at: int = 0,
        **params: Any,
    ) -> None:
        super().__init__(**params)
        self.every = every
        self.seconds = seconds
        self.calls = set(calls)
        self.fail_at = fail_at
        self.phase_calls = 0

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        self.phase_calls += 1
        call = self.phase_calls
        if call == self.fail_at:
            raise RuntimeError(f"SlowBrain fails on purpose at thinking call {call}")
        if call in self.calls or (self.every and call % self.every == 0):
            time.sleep(self.seconds)  # learning: a long policy update
        return super().thinking(muscle_id, data_from_muscle)


class SlowMuscle(DummyMuscle):
    """A DummyMuscle whose ``slow_at``-th ``propose_actions`` (counted from 1 over the phase;
    0: none) takes ``slow_seconds`` longer."""

    def __init__(self, slow_at: int = 0, slow_seconds: float = 0.0, **params: Any) -> None:
        super().__init__(**params)
        self.slow_at = slow_at
        self.slow_seconds = slow_seconds
        self.proposed = 0

    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        self.proposed += 1
        if self.proposed == self.slow_at:
            time.sleep(self.slow_seconds)  # thinking hard about this one
        return super().propose_actions(sensors, actuators_available)
