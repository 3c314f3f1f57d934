"""Plug-ins for the tests of ``context.record`` and of pausing recording (see
tests/system/test_recording.py).

:class:`RecordingMuscle` records its call count and a numpy array each step, pauses recording
on call ``pause_at`` and resumes it on call ``resume_at`` (0: never), and records a value with no
JSON form on call ``bad_at``; :class:`RecordingBrain` records each thought;
:class:`RecordingEnvironment` records its iteration each step; :class:`WaitingEnvironment` runs
until the file ``until`` exists, recording nothing of its own. :class:`TeardownRecordingBrain`,
:class:`TeardownRecordingMuscle` and :class:`ShutdownRecordingEnvironment` record after the
phase's last step (in ``teardown()``, ``shutdown()``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.core.information import ActuatorInformation
from palaestra.environment import DummyEnvironment


class RecordingMuscle(DummyMuscle):
    def __init__(
        self, pause_at: int = 0, resume_at: int = 0, bad_at: int = 0, **params: Any
    ) -> None:
        super().__init__(**params)
        self.pause_at = pause_at
        self.resume_at = resume_at
        self.bad_at = bad_at
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        self.context.record("calls", self.calls)
        self.context.record("array", np.arange(2) * self.calls)
        if self.calls == self.bad_at:
            self.context.record("opaque", object())
        if self.calls == self.pause_at:
            self.context.pause_recording()
        if self.calls == self.resume_at:
            self.context.resume_recording()
        return super().propose_actions(sensors, actuators_available)


class RecordingBrain(DummyBrain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        value = super().thinking(muscle_id, data_from_muscle)
        self.context.record("thought", {"value": value})
        return value


class RecordingEnvironment(DummyEnvironment):
    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        result = super().update(actuators)
        context = self.context
        if context is not None:
            context.record("iter", self.iter)
        return result


class WaitingEnvironment(DummyEnvironment):
    """Episodes of ``max_iter`` steps until the file ``until`` exists; then done."""

    def __init__(self, until: str = "", **params: Any) -> None:
        super().__init__(**params)
        self.until = until

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        sensors, rewards, done = super().update(actuators)
        return sensors, rewards, done or os.path.exists(self.until)


class TeardownRecordingBrain(DummyBrain):
    """Records in ``teardown()``, after the phase's last step."""

    def teardown(self) -> None:
        self.context.record("last_words", {"thinking_calls": self.thinking_calls})


class TeardownRecordingMuscle(DummyMuscle):
    """Records in ``teardown()``, after the phase's last step."""

    def teardown(self) -> None:
        self.context.record("last_words", 1)


class TeardownStatisticsBrain(RecordingBrain):
    """Adds a statistic in ``teardown()``, after the phase's last step."""

    def teardown(self) -> None:
        self.add_statistics("last_loss", 0.5)


class TeardownStatisticsMuscle(RecordingMuscle):
    """Adds a statistic in ``teardown()``, after the phase's last step."""

    def teardown(self) -> None:
        self.add_statistics("last_q", 1.5)


class ShutdownRecordingEnvironment(DummyEnvironment):
    """Records in ``shutdown()``, after the phase's last step."""

    def shutdown(self) -> bool:
        if self.context is not None:
            self.context.record("last_words", self.iter)
        return super().shutdown()
