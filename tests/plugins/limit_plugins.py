"""Plug-ins for the limit tests: a slow constructor, one that waits for a gate, a slow teardown,
and an environment that waits for a gate."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palaestra.agent import DummyBrain
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.environment import DummyEnvironment


class SlowBrain(DummyBrain):
    """A DummyBrain whose constructor takes ``seconds`` (a model being loaded, say)."""

    def __init__(self, seconds: float = 1.0, **params: Any) -> None:
        time.sleep(float(seconds))  # the behaviour under test, not a synchronisation
        super().__init__(**params)


class GatedBrain(DummyBrain):
    """A DummyBrain whose constructor, once begun (it creates ``<folder>/starting``), waits
    until the file ``<folder>/go`` exists (60 s at most; the folder: the working directory by
    default): a test holds a phase's start there."""

    def __init__(self, folder: str = ".", **params: Any) -> None:
        gate = Path(folder)
        (gate / "starting").touch()
        deadline = time.monotonic() + 60.0
        while not (gate / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # (polls the file the test creates)
        super().__init__(**params)


class SlowTeardownBrain(DummyBrain):
    """A DummyBrain whose ``teardown`` at the end of a phase takes ``seconds`` (a model being
    saved, say): its process stops that much later. It touches the file ``mark`` (if given)
    as its teardown begins."""

    def __init__(self, seconds: float = 1.0, mark: str = "", **params: Any) -> None:
        super().__init__(**params)
        self.seconds = float(seconds)
        self.mark = mark

    def teardown(self) -> None:
        if self.mark:
            Path(self.mark).touch()
        time.sleep(self.seconds)  # the behaviour under test, not a synchronisation
        super().teardown()


class GatedEnvironment(DummyEnvironment):
    """A DummyEnvironment whose first step waits (at most 60 s) until the file ``gate`` exists
    in the working directory: the test does something to the run, then opens the gate."""

    def __init__(self, gate: str = "gate", **params: Any) -> None:
        super().__init__(**params)
        self.gate = gate
        self.opened = False

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        deadline = time.monotonic() + 60.0
        while not self.opened and time.monotonic() < deadline:
            self.opened = os.path.exists(self.gate)
            if not self.opened:
                time.sleep(0.01)
        return super().update(actuators)


class FirstComerEnvironment(GatedEnvironment):
    """A :class:`GatedEnvironment` that waits only in the run that claims it first (it creates
    the file ``claim`` at its first step): two instances of one run file, one held while the
    other runs."""

    def __init__(self, claim: str = "claim", **params: Any) -> None:
        super().__init__(**params)
        self.claim = claim

    def update(
        self, actuators: Sequence[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
        if not self.opened:
            try:
                os.close(os.open(self.claim, os.O_CREAT | os.O_EXCL))
            except FileExistsError:  # another run claimed it: this one goes on at once
                self.opened = True
        return super().update(actuators)


class SlowShutdownEnvironment(DummyEnvironment):
    """A DummyEnvironment whose synchronous ``shutdown`` at the end of a phase takes
    ``seconds`` (a co-simulation ending, say). Not started to check its ids (the check would
    wait for its shutdown too)."""

    check_ids_by_starting = False

    def __init__(self, seconds: float = 1.0, **params: Any) -> None:
        super().__init__(**params)
        self.seconds = float(seconds)

    def shutdown(self) -> bool:
        time.sleep(self.seconds)  # the behaviour under test, not a synchronisation
        return super().shutdown()


class SlowStartEnvironment(DummyEnvironment):
    """A DummyEnvironment whose first ``start_environment`` takes ``seconds`` (a co-simulation
    starting, say); its resets are quick. Not started to check its ids."""

    check_ids_by_starting = False

    def __init__(self, seconds: float = 1.0, **params: Any) -> None:
        super().__init__(**params)
        self.seconds = float(seconds)
        self.started = False

    def start_environment(self) -> Any:
        if not self.started:
            self.started = True
            time.sleep(self.seconds)  # the behaviour under test, not a synchronisation
        return super().start_environment()
