"""Plug-ins for the failure matrix: each raises in the method named by its ``method`` param.

The exception is always ``RuntimeError(f"planned crash in {method}")``, raised from
:func:`planned_crash`, so a test finds both the message and a traceback line of this file.
:class:`MarkingMuscle` does not crash: it creates a file once it has acted a few times, so a
test knows that the run is under way before anything reached the store. :class:`SlowSetupBrain`
does not crash either: its agent is ready late, while another agent's setup fails.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from palaestra.agent import DummyBrain, DummyMuscle, DummyObjective
from palaestra.environment import DummyEnvironment


def planned_crash(method: str) -> None:
    raise RuntimeError(f"planned crash in {method}")


class CrashBrain(DummyBrain):
    """Raises in ``setup``, ``thinking``, ``store`` or ``teardown``."""

    def __init__(self, method: str = "thinking", **params: Any) -> None:
        super().__init__(**params)
        self.method = method

    def setup(self) -> None:
        if self.method == "setup":
            planned_crash("setup")

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.method == "thinking" and self.thinking_calls >= 3:
            planned_crash("thinking")
        return super().thinking(muscle_id, data_from_muscle)

    def store(self) -> None:
        if self.method == "store":
            planned_crash("store")
        super().store()

    def teardown(self) -> None:
        if self.method == "teardown":
            planned_crash("teardown")


class CrashMuscle(DummyMuscle):
    """Raises in ``setup``, ``propose_actions`` or ``update`` (on the third step), or in
    ``teardown``."""

    def __init__(self, method: str = "propose_actions", **params: Any) -> None:
        super().__init__(**params)
        self.method = method
        self.calls = 0

    def setup(self) -> None:
        if self.method == "setup":
            planned_crash("setup")

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        if self.method == "propose_actions" and self.calls >= 3:
            planned_crash("propose_actions")
        return super().propose_actions(sensors, actuators_available)

    def update(self, update: Any) -> None:
        if self.method == "update" and self.calls >= 3:
            planned_crash("update")
        super().update(update)

    def teardown(self) -> None:
        if self.method == "teardown":
            planned_crash("teardown")


class CrashObjective(DummyObjective):
    """Raises in ``internal_reward`` (on its third call)."""

    def __init__(self, method: str = "internal_reward", **params: Any) -> None:
        super().__init__(**params)
        self.method = method
        self.calls = 0

    def internal_reward(self, memory: Any, **kwargs: Any) -> float:
        self.calls += 1
        if self.method == "internal_reward" and self.calls >= 3:
            planned_crash("internal_reward")
        return super().internal_reward(memory, **kwargs)


class CrashEnvironment(DummyEnvironment):
    """Raises in ``start_environment``, ``update`` (on the third step), ``reset`` or
    ``shutdown``.

    ``reset`` is called from the second episode on. palaestra also starts the environment once
    while checking the run file and ignores a failure there: the run itself must report it.
    """

    def __init__(self, method: str = "update", **params: Any) -> None:
        super().__init__(**params)
        self.method = method

    def start_environment(self) -> Any:
        if self.method == "start_environment":
            planned_crash("start_environment")
        return super().start_environment()

    def update(self, actuators: Any) -> Any:
        if self.method == "update" and self.iter >= 2:
            planned_crash("update")
        return super().update(actuators)

    def reset(self) -> Any:
        if self.method == "reset":
            planned_crash("reset")
        return super().reset()

    def shutdown(self) -> bool:
        if self.method == "shutdown":
            planned_crash("shutdown")
        return super().shutdown()


class MarkingMuscle(DummyMuscle):
    """A DummyMuscle that creates the file ``mark`` once it has proposed ``after`` actions."""

    def __init__(self, mark: str = "acting", after: int = 10, **params: Any) -> None:
        super().__init__(**params)
        self.mark = mark
        self.after = after
        self.calls = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.calls += 1
        if self.calls == self.after:
            Path(self.mark).touch()
        return super().propose_actions(sensors, actuators_available)


class SlowSetupBrain(DummyBrain):
    """A DummyBrain whose ``setup`` takes ``seconds``: its agent is ready late."""

    def __init__(self, seconds: float = 1.0, **params: Any) -> None:
        super().__init__(**params)
        self.seconds = seconds

    def setup(self) -> None:
        time.sleep(self.seconds)


class SlowStoreBrain(DummyBrain):
    """A DummyBrain whose ``store`` (the dump at the end of a phase) touches the file ``mark``,
    then takes ``seconds``: the run is ending for that long."""

    def __init__(self, seconds: float = 30.0, mark: str = "storing", **params: Any) -> None:
        super().__init__(**params)
        self.seconds = seconds
        self.mark = mark

    def store(self) -> None:
        Path(self.mark).touch()
        time.sleep(self.seconds)
        super().store()


class MarkedSetupBrain(SlowSetupBrain):
    """A :class:`SlowSetupBrain` that touches the file ``mark`` as its setup begins."""

    def __init__(self, mark: str = "setting-up", **params: Any) -> None:
        super().__init__(**params)
        self.mark = mark

    def setup(self) -> None:
        Path(self.mark).touch()
        super().setup()
