"""A child forked before its spec is known, so that its imports overlap its parent's work.

``experiment-start`` forks the run's store writer first thing: it imports SQLAlchemy and the
store's modules (0.23 to 0.5 s) on the other CPU while the command reads and checks the run
file. When the run spawns its writer, :class:`Prestarted` (a
:class:`~palaestra.core.supervision.launch.Placement`) hands that child its spec down its pipe,
and from there on it is a launched child (:mod:`.launch`). A child not handed over is killed
(:meth:`Prestarted.close`, also at this process's exit), or exits when its parent died. It
never opens the store before, so a run file refused later leaves no trace.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
from typing import TYPE_CHECKING

from palaestra.core.supervision import interrupts

if TYPE_CHECKING:  # the child imports the runtime; this module forks it first thing
    from multiprocessing.process import BaseProcess

    from palaestra.core.supervision.processes import ChildSpec, Launched

LOG = logging.getLogger(__name__)

SIGNALS = set(interrupts.SIGNALS)
"""Blocked while the child forks, so that none reaches it before it handles them itself (the
command's handlers would raise in it)."""


class Prestarted:
    """A :class:`~palaestra.core.supervision.launch.Placement` holding one child of ``role``,
    forked now: the first spec of that role goes to it, every other child starts as usual.

    Args:
        role: The role of the child it stands for.
        prepare: ``"module:function"`` the child calls with ``args`` as soon as it is forked
            (imports, say); an error there is left to the child's real start, which reports it.
        args: The arguments of ``prepare``.
    """

    def __init__(self, role: str, prepare: str, *args: str) -> None:
        self.role = role
        read, self._pipe = os.pipe()
        context = multiprocessing.get_context("fork")
        self._process: BaseProcess | None = context.Process(
            target=_wait_for_spec, args=(read, self._pipe, os.getpid(), prepare, args)
        )
        kept = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # till the child set its own
        try:
            self._process.start()
            # however this process ends from here on (a signal pending till the mask is
            # restored included), the child ends first: multiprocessing's exit handler
            # (registered by start(), so it runs after this one) would wait for it for ever
            atexit.register(self.close)
        finally:
            os.close(read)
            signal.pthread_sigmask(signal.SIG_SETMASK, kept)

    def launch(self, spec: ChildSpec) -> Launched | None:
        if spec.role != self.role or self._process is None or not self._process.is_alive():
            return None
        child = PrestartedChild(spec, self._process, self._pipe)
        self._process = None  # handed over: the supervisor owns it now
        atexit.unregister(self.close)
        LOG.debug("%s: the child forked ahead of the run (pid %s)", spec.name, child.pid)
        return child

    def close(self) -> None:
        """Kill the child if it was not handed over: it holds nothing but imports yet."""
        if self._process is None:
            return
        process, self._process = self._process, None
        atexit.unregister(self.close)
        process.kill()  # (before its pipe closes: else it may see the end and exit first)
        process.join()
        os.close(self._pipe)


class PrestartedChild:
    """The :class:`~palaestra.core.supervision.processes.Launched` of a :class:`Prestarted`."""

    host = ""

    def __init__(self, spec: ChildSpec, process: BaseProcess, pipe: int) -> None:
        self.name = spec.name
        self._spec = spec
        self._process = process
        self._pipe: int | None = pipe

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode

    @property
    def held(self) -> tuple[int, ...]:
        return () if self._pipe is None else (self._pipe,)

    def start(self) -> None:
        from palaestra.core.supervision.launch import encode_spec

        assert self._pipe is not None
        data = memoryview(encode_spec(self._spec))
        try:
            while data:  # (and the pipe kept open: our end is its end)
                data = data[os.write(self._pipe, data) :]
        except BrokenPipeError:  # it ended already; its exit code tells
            pass

    @property
    def sentinel(self) -> int:
        return self._process.sentinel

    def signal(self, signum: int) -> None:
        if self._process.exitcode is None and self._process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signum)

    def join(self, timeout: float) -> None:
        self._process.join(timeout)

    def close_sentinel(self) -> None:
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None


def _wait_for_spec(
    read: int, write: int, parent: int, prepare: str, args: tuple[str, ...]
) -> None:
    """The forked child: prepare, then run the spec that comes down ``read``."""
    interrupts.leave_to_executor()  # Ctrl-C (a closed terminal) is the executor's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    os.close(write)
    from palaestra.core.supervision import runtime  # noqa: F401 - what every child runs
    from palaestra.core.supervision.processes import die_with_parent
    from palaestra.core.supervision.remote_child import serve

    die_with_parent(parent)

    module, _, function = prepare.partition(":")
    with contextlib.suppress(Exception):  # the real start imports it again and reports it
        getattr(importlib.import_module(module), function)(*args)
    serve(read)
