"""Plug-ins for system tests: they report where they ran, or fail on purpose."""

from __future__ import annotations

import ctypes
import json
import os
import time
from pathlib import Path
from typing import Any

import setproctitle

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.environment import DummyEnvironment


class ProbeBrain(DummyBrain):
    """A DummyBrain whose dump also names its process and the Muscles' processes."""

    def setup(self) -> None:
        self.muscle_titles: set[str] = set()

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        title, value = data_from_muscle if data_from_muscle is not None else ("", None)
        if title:
            self.muscle_titles.add(title)
        return super().thinking(muscle_id, value)

    def store(self) -> None:
        state = {
            "value": self.value,
            "thinking_calls": self.thinking_calls,
            "title": setproctitle.getproctitle(),
            "pid": os.getpid(),
            "muscle_titles": sorted(self.muscle_titles),
            "sensors": [str(s.uid) for s in self.sensors],
            "seed": self.seed,
        }
        self.store_brain_dump(json.dumps(state).encode())


class ProbeMuscle(DummyMuscle):
    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        setpoints, value = super().propose_actions(sensors, actuators_available)
        return setpoints, (setproctitle.getproctitle(), value)


class CrashingBrain(DummyBrain):
    """Raises in ``thinking`` once it has been called ``after`` times. With ``meet`` (a folder),
    its first ``thinking`` call leaves a file there and waits, up to a minute, until ``parties``
    files are there: the runs of a sweep that must run side by side meet (a sequential sweep
    fails the test rather than passing by luck of timing)."""

    def __init__(
        self, after: int = 3, meet: str | None = None, parties: int = 2, **params: Any
    ) -> None:
        super().__init__(**params)
        self.after = after
        self.meet = meet
        self.parties = parties

    def _meet(self) -> None:
        assert self.meet is not None
        folder = Path(self.meet)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(folder.iterdir())) < self.parties:
            if time.monotonic() > deadline:
                raise RuntimeError(f"met {len(list(folder.iterdir()))} of {self.parties} runs")
            time.sleep(0.01)  # polls for the others' files

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.meet is not None and self.thinking_calls == 0:
            self._meet()
        if self.thinking_calls >= self.after:
            raise ValueError(f"brain broke after {self.after} calls")
        return super().thinking(muscle_id, data_from_muscle)


class CrashingMuscle(DummyMuscle):
    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        raise RuntimeError("muscle cannot act")


def hang(how: str) -> None:
    """Never return: ``loop`` (Python, the GIL passed on), ``native`` (native code that
    holds the GIL: pause(2) through ctypes.PyDLL) or ``sleep`` (native code without it)."""
    if how == "native":
        ctypes.PyDLL(None).pause()
    while True:
        if how == "sleep":
            time.sleep(3600)


class StuckBrain(DummyBrain):
    """Stops answering (see :func:`hang`) on its ``after``-th call of ``thinking``."""

    def __init__(self, after: int = 3, how: str = "loop", **params: Any) -> None:
        super().__init__(**params)
        self.after = after
        self.how = how

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.thinking_calls >= self.after:
            hang(self.how)
        return super().thinking(muscle_id, data_from_muscle)


class UnprobedEnvironment(DummyEnvironment):
    """Too expensive (say) to be started while checking a run file."""

    check_ids_by_starting = False


class StuckMuscle(DummyMuscle):
    """Stops answering (see :func:`hang`) on its ``after``-th action."""

    def __init__(self, after: int = 3, how: str = "loop", **params: Any) -> None:
        super().__init__(**params)
        self.after = after
        self.how = how
        self.acted = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.acted += 1
        if self.acted > self.after:
            hang(self.how)
        return super().propose_actions(sensors, actuators_available)


class StuckEnvironment(DummyEnvironment):
    """Stops answering (see :func:`hang`) on its ``after``-th step."""

    check_ids_by_starting = True

    def __init__(self, after: int = 3, how: str = "loop", **params: Any) -> None:
        super().__init__(**params)
        self.after = after
        self.how = how

    def update(self, actuators: Any) -> Any:
        if self.iter >= self.after:
            hang(self.how)
        return super().update(actuators)


class MissingFileEnvironment(DummyEnvironment):
    """Reads a data file at start that is not there (as a MIDAS scenario whose data sets
    were never downloaded), wrapped in an error of its own."""

    def start_environment(self) -> Any:
        try:
            open("/nonexistent/palaestra/data.csv", encoding="utf-8").close()
        except FileNotFoundError as exc:
            raise ValueError("could not load the scenario") from exc
        return super().start_environment()
