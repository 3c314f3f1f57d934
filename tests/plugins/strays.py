"""Plug-ins that misbehave with processes, threads and the console.

:class:`ForkingEnvironment` starts a process in ``update`` and leaves it running: it ignores
SIGTERM and sleeps for ever (palaestra must kill it, warn about it, and still finish the run).
:class:`HangOnceEnvironment` blocks for ever in one method the first time that method runs in
a directory (the run file's probe), and behaves from then on (the run itself).
:class:`SignalEnvironment` calls ``signal.signal`` in ``update`` (a worker thread).
:class:`CtrlCMuscle` installs Python's own Ctrl-C handler in its constructor, as a training
script does, and touches the file ``mark`` at its 20th step.
:class:`InterruptingEnvironment` sends SIGINT once to the process whose pid the environment
variable ``INTERRUPT_PID`` holds (a notebook's interrupt, come while its run executes).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.environment import DummyEnvironment


def _linger() -> None:
    """Ignore SIGTERM and never return: a stray that only SIGKILL ends."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(3600)


def _linger_in_fork() -> None:
    """``os.fork`` a process that lingers; it writes its pid to ``stray.pid`` first."""
    pid = os.fork()
    if pid == 0:
        try:
            Path("stray.pid").write_text(str(os.getpid()))
            _linger()
        finally:
            os._exit(0)


def _linger_twice() -> None:
    """A daemon's double fork: the lingering grandchild outlives its parent at once."""
    pid = os.fork()
    if pid == 0:
        try:
            _linger_in_fork()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


class ForkingEnvironment(DummyEnvironment):
    """Starts a lingering process on its second step.

    Args:
        how: ``multiprocessing`` (a daemon ``multiprocessing.Process``), ``fork``
            (``os.fork``) or ``double-fork`` (a grandchild whose parent ended).
        hang: Then never return from ``update``.
        vanish: Then end the process at once (``os._exit``): its stray is orphaned.
    """

    def __init__(
        self, how: str = "multiprocessing", hang: bool = False, vanish: bool = False, **params: Any
    ) -> None:
        super().__init__(**params)
        self.how = how
        self.hang = hang
        self.vanish = vanish
        self.started = False

    def update(self, actuators: Any) -> Any:
        if not self.started and self.iter >= 1:
            self.started = True
            if self.how == "multiprocessing":
                multiprocessing.get_context("fork").Process(target=_linger, daemon=True).start()
            elif self.how == "fork":
                _linger_in_fork()
            else:
                _linger_twice()
            while self.hang:  # stuck for good: only SIGKILL ends this process
                os.sched_yield()
            if self.vanish:  # the process ends at once, its stray orphaned
                os._exit(3)
        return super().update(actuators)


class HangOnceEnvironment(DummyEnvironment):
    """Blocks for ever in ``where`` (``init``, ``start`` or ``shutdown``) the first time.

    The first call creates the file ``hung-<where>`` in the working directory and then blocks
    (ignoring SIGTERM, as a stuck native call would); later calls, with the file there, behave.
    """

    def __init__(self, where: str = "start", **params: Any) -> None:
        super().__init__(**params)
        self.where = where
        self._hang_once("init")

    def _hang_once(self, where: str) -> None:
        mark = Path(f"hung-{where}")
        if self.where != where or mark.exists():
            return
        mark.touch()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Event().wait()

    def start_environment(self) -> Any:
        self._hang_once("start")
        return super().start_environment()

    def shutdown(self) -> bool:
        self._hang_once("shutdown")
        return super().shutdown()


class SignalEnvironment(DummyEnvironment):
    """Installs a SIGUSR1 handler in ``update``, which palaestra runs in a worker thread."""

    def update(self, actuators: Any) -> Any:
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)
        return super().update(actuators)


class CtrlCMuscle(DummyMuscle):
    """A DummyMuscle that asks for ``KeyboardInterrupt`` on Ctrl-C (the run's processes leave
    Ctrl-C to the executor), and marks its 20th step with the file ``mark``."""

    def __init__(self, mark: str = "marked", **params: Any) -> None:
        super().__init__(**params)
        self.mark = mark
        self.steps = 0
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def propose_actions(self, sensors: Any, actuators_available: Any) -> Any:
        self.steps += 1
        if self.steps == 20:
            Path(self.mark).touch()
        return super().propose_actions(sensors, actuators_available)


class InterruptingEnvironment(DummyEnvironment):
    """At its 5th step, SIGINT to the process ``INTERRUPT_PID`` names, once per process."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.sent = False

    def update(self, actuators: Any) -> Any:
        if self.iter >= 4 and not self.sent:
            self.sent = True
            os.kill(int(os.environ["INTERRUPT_PID"]), signal.SIGINT)
        return super().update(actuators)
