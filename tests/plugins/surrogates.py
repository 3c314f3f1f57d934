"""Plug-ins whose texts hold a lone surrogate (``"\\udcff"``), which no UTF-8 encoder takes.

Such a text comes from ``os.fsdecode`` of bytes that are no UTF-8 (a file name), or from any
decoding with ``errors="surrogateescape"``. A Muscle raises an exception saying one, or records
one with ``context.record``; an environment reports one as a sensor's value or in a reward's
name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyMuscle
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.environment import DummyEnvironment

TEXT = "bad \udcff"
"""A text with a lone surrogate: what ``os.fsdecode(b"bad \\xff")`` gives."""


class SurrogateMuscle(DummyMuscle):
    """In ``propose_actions`` at its third call: ``how`` is ``raise`` (a ``ValueError`` saying
    :data:`TEXT`) or ``record`` (``context.record("note", TEXT)``)."""

    def __init__(self, how: str = "raise", **params: Any) -> None:
        super().__init__(**params)
        self.how = how
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        if self.calls >= 3 and self.how == "raise":
            raise ValueError(TEXT)
        if self.calls >= 3 and self.how == "record":
            self.context.record("note", {"text": TEXT})
        return super().propose_actions(sensors, actuators_available)


class SurrogateEnvironment(DummyEnvironment):
    """A DummyEnvironment that, as ``how`` says, also reports a sensor ``"text"`` (no space)
    whose value is :data:`TEXT` from step 2 on (``sensor``), or from step 2 on reports its
    reward under a name that ends in :data:`TEXT` (``reward``)."""

    def __init__(self, how: str = "sensor", **params: Any) -> None:
        super().__init__(**params)
        self.how = how

    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        sensors, actuators = super().start_environment()
        if self.how == "sensor":
            sensors = [*sensors, SensorInformation("fine", None, "text")]
        return sensors, actuators

    def update(self, actuators: Sequence[ActuatorInformation]) -> Any:
        sensors, rewards, done = super().update(actuators)
        if self.how == "sensor":
            value = TEXT if self.iter >= 2 else "fine"
            sensors = [*sensors, SensorInformation(value, None, "text")]
        if self.iter >= 2 and self.how == "reward":
            rewards = [RewardInformation(r.value, r.space, f"reward {TEXT}") for r in rewards]
        return sensors, rewards, done
