"""One run in an executor process of its own: for the Python API and for parallel sweeps.

The executor needs its process's main thread (signal handlers) and no running event loop
(``asyncio.run``); a notebook's kernel has a loop running, a sweep runs several at once. So
the run goes to a child process that does what ``experiment-start`` does for one run, and
sends its :class:`~palaestra.experiment.executor.RunOutcome` back over a pipe.

The child is forked where this process has a single thread (a script, the command line: fast,
nothing re-imported); where it has more (a Jupyter kernel, whose threads may hold locks at the
fork), it is spawned, a fresh interpreter importing palaestra and the run's plug-ins anew. The
child is in a process group of its own: Ctrl-C reaches only this process, which passes it on
(:meth:`ExecutorProcess.interrupt`), once; it dies with this process (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from typing import Any

from palaestra.core.errors import EXIT_RUN_FAILED
from palaestra.core.specs import RunSpec
from palaestra.experiment.executor import RunOutcome
from palaestra.experiment.runtime_config import RuntimeConfig

__all__ = ["ExecutorProcess", "run_here"]


def run_here(run: RunSpec, config: RuntimeConfig) -> RunOutcome:
    """Run ``run`` in this process as ``experiment-start`` does: the caller's main thread, no
    event loop running. Orphans of the run's processes come to this process and are ended."""
    from palaestra.core.processes import configure_child_logging
    from palaestra.core.reaper import become_subreaper, take_down_strays
    from palaestra.experiment.executor import execute

    level = logging.getLevelName(config.log_level.upper())
    configure_child_logging("Executor", level if isinstance(level, int) else logging.WARNING)
    become_subreaper()
    try:
        return execute(run, config)
    finally:
        take_down_strays("Executor")


class ExecutorProcess:
    """A child process executing one run; :meth:`outcome` once :attr:`sentinel` is ready.

    Args:
        run: The checked run.
        config: The runtime configuration it runs with.
    """

    def __init__(self, run: RunSpec, config: RuntimeConfig) -> None:
        self.run = run
        method = "fork" if threading.active_count() == 1 else "spawn"
        context = multiprocessing.get_context(method)
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_child_main,
            args=(run, config, send, os.getpid()),
            name=f"palaestra-executor-{run.uid}",
            daemon=False,
        )
        self._process.start()
        send.close()
        self._interrupts = 0

    @property
    def sentinel(self) -> int:
        """An fd that becomes readable when the child has ended."""
        return int(self._process.sentinel)

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        pid: int | None = self._process.pid
        return pid

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Pass a signal on to the child: once stops the run cleanly, twice at once."""
        self._interrupts += 1
        if self._process.is_alive() and self._process.pid is not None:
            try:
                os.kill(self._process.pid, signum)
            except ProcessLookupError:
                pass

    def outcome(self) -> RunOutcome:
        """Wait for the child's end and return the run's outcome (an error if it died)."""
        result: RunOutcome | None = None
        try:
            if self._receive.poll(None):
                result = self._receive.recv()
        except (EOFError, OSError):
            result = None
        self._process.join()
        self._receive.close()
        if result is not None:
            return result
        code = self._process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        message = f"the executor process of run '{self.run.uid}' died ({how}) before it ended"
        return RunOutcome(self.run.uid, "", EXIT_RUN_FAILED, message)


def _child_main(
    run: RunSpec, config: RuntimeConfig, send: multiprocessing.connection.Connection, parent: int
) -> None:
    """In the child: leave the parent's loop, signals and group behind; run; report."""
    from palaestra.core.console import guard_console
    from palaestra.core.processes import die_with_parent

    os.setpgid(0, 0)  # Ctrl-C at a terminal reaches the parent only; it passes it on once
    guard_console()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _forget_running_loop()
    die_with_parent(parent)
    try:
        outcome = run_here(run, config)
    except KeyboardInterrupt:  # before the executor's own handler was in place
        outcome = RunOutcome(run.uid, "", 128 + signal.SIGINT, "interrupted before it started")
    send.send(outcome)
    send.close()


def _forget_running_loop() -> None:
    """A fork inside a running loop leaves that loop marked running in this thread."""
    events: Any = asyncio.events
    events._set_running_loop(None)
