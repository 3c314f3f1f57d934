"""One run in an executor process of its own: for the Python API and for parallel sweeps.

The executor needs its process's main thread (signal handlers) and no running event loop
(``asyncio.run``); a notebook's kernel has a loop running, a sweep runs several at once. So
the run goes to a child process that does what ``experiment-start`` does for one run, and
sends its :class:`~palaestra.experiment.executor.RunOutcome` back over a pipe.

The child is forked where this process has a single thread (a script, the command line: fast,
nothing re-imported); where it has more (a Jupyter kernel, whose threads may hold locks at the
fork), where the runtime config's ``start_method`` is spawn, or where this process initialised
CUDA (a forked executor could not import a plug-in module that touches CUDA), it is spawned: a
fresh interpreter with this process's ``sys.path`` and working directory, importing palaestra
and the run's plug-ins anew (~1 s more). The outcome comes back in a temporary file written as
the child ends. The child is in a process group of its own: Ctrl-C reaches only this process,
which passes it on (:meth:`ExecutorProcess.interrupt`), once; it dies with this process
(``PR_SET_PDEATHSIG``).
Where no command's undertaker watches it (the Python API), it starts its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.process
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_RUN_FAILED, PalaestraError
from palaestra.core.supervision import interrupts, undertaker
from palaestra.core.supervision.affinity import pin
from palaestra.core.supervision.start_methods import SPAWN, cuda_initialised
from palaestra.experiment.executor import RunOutcome
from palaestra.experiment.runtime_config import RuntimeConfig

__all__ = ["ExecutorProcess", "run_here", "spawned_main"]


def run_here(run: RunSpec, config: RuntimeConfig) -> RunOutcome:
    """Run ``run`` in this process as ``experiment-start`` does: the caller's main thread, no
    event loop running. Orphans of the run's processes come to this process and are ended."""
    from palaestra.core.supervision.processes import configure_child_logging
    from palaestra.core.supervision.reaper import become_subreaper, take_down_strays
    from palaestra.experiment.executor import execute

    level = logging.getLevelName(config.log_level.upper())
    configure_child_logging("Executor", level if isinstance(level, int) else logging.WARNING)
    become_subreaper()
    try:
        return execute(run, config)
    except PalaestraError as exc:  # (before the run started: an invalid config, say)
        return RunOutcome(run.uid, "", exc.exit_code, exc.format_message())
    finally:
        take_down_strays("Executor")


class ExecutorProcess:
    """A child process executing one run; :meth:`outcome` once :attr:`sentinel` is ready.

    Args:
        run: The checked run.
        config: The runtime configuration it runs with.
        cpus: The CPUs it runs on (with ``cpu_affinity: worker``, its share of a parallel
            sweep's; see :func:`palaestra.core.supervision.affinity.share`); empty: all.
    """

    def __init__(self, run: RunSpec, config: RuntimeConfig, cpus: tuple[int, ...] = ()) -> None:
        self.run = run
        handle, self._result_path = tempfile.mkstemp(prefix="palaestra-outcome-")
        os.close(handle)
        undertaker.leave(self._result_path)  # (removed by outcome(), unless this is killed)
        job = (run, config, self._result_path, os.getpid(), cpus)
        self._forked: multiprocessing.process.BaseProcess | None = None
        self._spawned: subprocess.Popen[bytes] | None = None
        # Blocked until the child has its own handlers: a Ctrl-C passed on at once must not
        # run this process's handlers in the child, nor be lost in the fork's bookkeeping.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _PASSED_ON)
        try:
            forkable = config.start_method != SPAWN and not cuda_initialised()
            if (forkable and threading.active_count() == 1) or not hasattr(os, "pidfd_open"):
                self._forked = multiprocessing.get_context("fork").Process(
                    target=_child_main, args=job, name=f"palaestra-executor-{run.uid}"
                )
                self._forked.start()
                pid = self._forked.pid
            else:
                self._spawned = _spawn(job)
                pid = self._spawned.pid
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        assert pid is not None  # started
        self.pid: int = pid
        self._pidfd = _pidfd(pid)

    @property
    def sentinel(self) -> int:
        """An fd that becomes readable when the child has ended.

        A pidfd: multiprocessing's sentinel pipe stays open while the run's own processes
        (which inherit it) live, which they may for a moment after the executor ended.
        """
        if self._pidfd is not None:
            return self._pidfd
        assert self._forked is not None  # spawned only where pidfds exist
        return int(self._forked.sentinel)

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Pass a signal on to the child: once stops the run cleanly, twice at once."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def outcome(self) -> RunOutcome:
        """Wait for the child's end and return the run's outcome (an error if it died)."""
        code = self._wait()
        try:
            with open(self._result_path, "rb") as file:
                result: RunOutcome | None = pickle.load(file)
        except (OSError, EOFError, pickle.UnpicklingError):
            result = None
        finally:
            os.unlink(self._result_path)
        if result is not None:
            return result
        if -code in _PASSED_ON:  # passed on before it could take it
            return _interrupted(self.run, -code)
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        message = f"the executor process of run '{self.run.uid}' died ({how}) before it ended"
        return RunOutcome(self.run.uid, "", EXIT_RUN_FAILED, message)

    def _wait(self) -> int:
        if self._forked is not None:
            self._forked.join()
            code = self._forked.exitcode
        else:
            assert self._spawned is not None
            code = self._spawned.wait()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return code if code is not None else EXIT_RUN_FAILED


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):  # Linux < 5.3
        return None


_PASSED_ON = set(interrupts.SIGNALS)
"""The signals a parent passes on to its executor processes (see :mod:`palaestra.experiment.
sweep`)."""
_SPAWNED = "from palaestra.experiment.isolated import spawned_main; spawned_main()"


def _spawn(job: tuple[Any, ...]) -> subprocess.Popen[bytes]:
    """A fresh interpreter, reading its job from stdin; unlike multiprocessing's spawn it does
    not re-run the caller's ``__main__`` (a script without a ``__name__`` guard). It is handed
    the pipe to the undertaker, which removes the run's temporary files should the command be
    killed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    fd = undertaker.descriptor()
    child = subprocess.Popen(
        [sys.executable, "-c", _SPAWNED],
        stdin=subprocess.PIPE,
        env=env,
        process_group=0,
        pass_fds=() if fd is None else (fd,),
    )
    assert child.stdin is not None
    with child.stdin:
        child.stdin.write(pickle.dumps((job, fd)))
    return child


def spawned_main() -> None:
    """The entry of a spawned executor process: its job comes pickled on stdin, with the
    pipe to the undertaker it was handed."""
    job, leaving = pickle.loads(sys.stdin.buffer.read())
    undertaker.adopt(leaving)
    _child_main(*job)


def _child_main(
    run: RunSpec, config: RuntimeConfig, result_path: str, parent: int, cpus: tuple[int, ...]
) -> None:
    """In the child: leave the parent's loop, signals and group behind (and run on ``cpus``,
    if given: a share of a parallel sweep's); run; report."""
    from palaestra.core.supervision.console import guard_console
    from palaestra.core.supervision.processes import die_with_parent

    os.setpgid(0, 0)  # Ctrl-C at a terminal reaches the parent only; it passes it on once
    guard_console()
    signal.set_wakeup_fd(-1)
    for signum in _PASSED_ON:  # (until the executor's own: record and unwind)
        signal.signal(signum, interrupts.raising)
    _forget_running_loop()
    die_with_parent(parent)
    _watched()
    pin(cpus)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _PASSED_ON)  # a pending one arrives here
        outcome = run_here(run, config)
    except (KeyboardInterrupt, interrupts.Terminated):  # before the executor's own handler
        outcome = _interrupted(run, interrupts.received() or signal.SIGINT)
    interrupts.install(interrupts.recording)  # one that comes now: the outcome is written
    with open(result_path, "wb") as file:
        pickle.dump(outcome, file)


def _interrupted(run: RunSpec, signum: int) -> RunOutcome:
    """The outcome of a run whose executor process ``signum`` ended before its executor
    handled signals: nothing of it was recorded."""
    name = signal.Signals(signum).name
    return RunOutcome(run.uid, "", 128 + signum, f"interrupted by {name}", recorded=False)


def _watched() -> None:
    """Where no command's undertaker watches this run (a caller of the Python API: a script,
    a notebook's kernel), its own: a killed kernel, or this executor killed (the OOM killer),
    leaves no process behind, neither palaestra's own stuck in a plug-in's code nor one a
    plug-in started (a simulator, a daemon)."""
    from palaestra.core.supervision.reaper import start_undertaker

    if undertaker.descriptor() is None:
        start_undertaker()


def _forget_running_loop() -> None:
    """A fork inside a running loop leaves that loop marked running in this thread."""
    events: Any = asyncio.events
    events._set_running_loop(None)
