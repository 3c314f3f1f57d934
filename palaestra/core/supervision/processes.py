"""Starting, watching and stopping child processes: start methods, titles, parent-death watchdog.

Children start through aiomultiprocess, by default forked straight from their parent after it
imported what they need (no child re-imports the world; a child is its parent's own child, for
SIGCHLD and PR_SET_PDEATHSIG). Where fork cannot be used (CUDA initialised in the parent: see
:mod:`palaestra.core.supervision.start_methods`) they start by forkserver or spawn from the same
:class:`ChildSpec` and import their plug-ins themselves. Each child gets the read end of a pipe
whose write end only its parent holds: when the parent dies the pipe reads EOF and a watchdog
thread ends the child. Every child is a subreaper and kills what its plug-ins left running when
it ends (:mod:`palaestra.core.supervision.reaper`).

A child's end is observed on a pidfd (or its process sentinel) and turned into a
:class:`~palaestra.core.supervision.esm.ChildExit` event on the asyncio loop, with no polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import signal
import sys
import threading
import types
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiomultiprocess
import msgspec
from aiomultiprocess.types import Unit

from palaestra.core import liveness
from palaestra.core.supervision import interrupts, undertaker
from palaestra.core.supervision.console import guard_console
from palaestra.core.supervision.esm import ChildExit, Component
from palaestra.core.supervision.mainthread import guard_signal_calls
from palaestra.core.supervision.reaper import become_subreaper, take_down_strays
from palaestra.core.supervision.start_methods import FORK, FORKSERVER, context
from palaestra.core.wire.netlink import Network

LOG = logging.getLogger(__name__)


class Launched(Protocol):
    """A child started by a :class:`Placement`, as the supervisor sees it."""

    name: str
    host: str
    """Where it runs, for messages (a host name, a node address, a namespace)."""

    @property
    def pid(self) -> int | None:
        """Its process id where it is this host's process (None elsewhere)."""

    @property
    def exitcode(self) -> int | None:
        """Its exit code once it ended (negative: killed by that signal)."""

    @property
    def sentinel(self) -> int:
        """An fd that becomes readable once the child ended and ``exitcode`` is known."""

    @property
    def held(self) -> tuple[int, ...]:
        """The fds this process holds for the child (its liveness pipe's end): no child forked
        later may inherit them."""

    def start(self) -> None: ...

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the child (nothing if it ended)."""

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for ``exitcode`` after the sentinel became readable."""

    def close_sentinel(self) -> None: ...


@dataclass(frozen=True)
class ChildSpec:
    """Everything a child needs to start: what to run and where its parent listens.

    The child builds ``component(name=name, **args)``, with the fields of ``args`` as keyword
    arguments; :func:`check_args` has compared them with the constructor's parameters when the
    spec was made, in the parent.
    """

    name: str
    role: str
    component: type[Component] | Deferred
    args: msgspec.Struct
    run_dir: str
    parent_endpoint: str
    log_level: int = logging.WARNING
    start_method: str = FORK
    """How this child starts its own children (its parent's method: see
    :mod:`palaestra.core.supervision.start_methods`)."""
    network: Network | None = None
    """The child's host and the run's keys where the run crosses hosts (its parent's, unless
    its :class:`~palaestra.core.supervision.launch.Placement` put it elsewhere: see
    :mod:`palaestra.core.wire.netlink`); None: every link is a local one."""
    cpus: tuple[int, ...] = ()
    """The CPUs the child runs on (see :mod:`palaestra.core.supervision.affinity`); empty:
    where the operating system puts it."""

    def build(self) -> Component:
        """The component this child runs (called in the child)."""
        component = self.component
        if isinstance(component, Deferred):
            component = component.resolve()
            check_args(component, self.args)
        return component(name=self.name, **msgspec.structs.asdict(self.args))


@dataclass(frozen=True)
class Deferred:
    """A component class named by its import path (``"package.module:Class"``), imported in
    the child only: for a heavy module no other process needs (the store writer's SQLAlchemy,
    about 20 MiB, would otherwise be in every process forked from the executor). Its arguments
    are checked in the child, before it is built.
    """

    path: str

    def resolve(self) -> type[Component]:
        from palaestra.core.description.loading import load_class

        component = load_class(self.path)
        if not issubclass(component, Component):
            raise TypeError(f"{self.path} is not a palaestra component")
        return component


def check_args(component: type[Component], args: msgspec.Struct) -> None:
    """Raise TypeError unless ``component(name=..., **args)`` matches its constructor."""
    params = _parameters(component)  # type: ignore[arg-type]  # classes hash by identity
    if params is None:  # takes **kwargs: anything goes
        return
    given = set(args.__struct_fields__)
    required, accepted = params
    unknown = sorted(given - accepted)
    missing = sorted(required - given)
    if unknown or missing:
        raise TypeError(
            f"{type(args).__name__} does not fit {component.__module__}:{component.__qualname__}"
            f"(name, ...): unknown {unknown or 'none'}, missing {missing or 'none'}"
        )


@functools.cache
def _parameters(component: type[Component]) -> tuple[frozenset[str], frozenset[str]] | None:
    """Required and accepted keyword parameters of the constructor (None: **kwargs)."""
    signature = inspect.signature(component)
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    named = {
        n: p
        for n, p in signature.parameters.items()
        if n != "name" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    required = frozenset(n for n, p in named.items() if p.default is p.empty)
    return required, frozenset(named)


@dataclass
class Child:
    spec: ChildSpec
    process: _ChildProcess | Launched
    alive_w: multiprocessing.connection.Connection
    ready: asyncio.Future[dict[str, str]]
    stopping: bool = False
    busy: str = ""
    """The plug-in call its stop is in (a :class:`~palaestra.core.wire.messages.Busy`): named
    should the stop be late."""
    exit_code: int | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        pid: int | None = self.process.pid
        return pid

    @property
    def launched(self) -> bool:
        return not isinstance(self.process, _ChildProcess)


class _ChildProcess(aiomultiprocess.Process):  # type: ignore[misc]  # untyped library
    """An aiomultiprocess process without the Manager server it would start for results
    (children report over ZMQ; their end is seen on the sentinel, not by a polling ``join``).

    A forked child runs ``target(spec, alive)`` at once; one started by forkserver or spawn
    (``method``) unpickles ``spec`` only once its signals are set, since that imports the
    plug-in modules (seconds, for torch).
    """

    def __init__(
        self,
        *,
        target: Callable[..., Any],
        spec: ChildSpec,
        alive: multiprocessing.connection.Connection,
        close_fds: Sequence[int] = (),
        method: str = FORK,
    ) -> None:
        self.unit = Unit(target=target, args=(spec, alive), kwargs={}, namespace=None)
        self.method = method
        if method == FORK:
            bootstrap: Callable[..., None] = _bootstrap_fork
            args: tuple[Any, ...] = (self.unit, os.getpid(), tuple(close_fds))
        else:  # nothing inherited but what is passed: no sibling's pipe to close
            bootstrap = _bootstrap_fresh
            parent = None if method == FORKSERVER else os.getpid()  # forked by the server
            args = (target, pickle.dumps(spec), alive, parent, method, undertaker.pipe())
        self.aio_process = context(method).Process(
            target=bootstrap, args=args, name=spec.name, daemon=False
        )
        self._pidfd: int | None = None

    def start(self) -> None:
        if self.method == FORK:
            self.aio_process.start()
        else:
            with without_main(), interrupts.held_from_fresh_child():
                self.aio_process.start()
        pid = self.aio_process.pid
        assert pid is not None  # started
        try:
            self._pidfd = os.pidfd_open(pid)
        except (OSError, AttributeError):  # Linux < 5.3: multiprocessing's sentinel pipe
            self._pidfd = None

    @property
    def sentinel(self) -> int:
        """An fd readable once the child has ended and its exit status is there.

        A pidfd where the kernel has them: multiprocessing's sentinel is a pipe that reads EOF
        only when every copy of its write end is closed, and a process a plug-in forked in the
        child holds a copy for as long as it lives, so the child's end would go unseen.
        """
        if self._pidfd is not None:
            return self._pidfd
        return int(self.aio_process.sentinel)

    def close_sentinel(self) -> None:
        """Release the pidfd (once the child's end has been handled)."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    @property
    def exitcode(self) -> int | None:
        code: int | None = self.aio_process.exitcode
        return code

    def join(self, timeout: float) -> None:
        self.aio_process.join(timeout)

    def signal(self, signum: int) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


def bootstrap(unit: Unit) -> None:
    """Run the child's coroutine in aiomultiprocess's loop; its result is the exit code.

    Whatever the child still has running at its end (a plug-in's process: its own palaestra
    children have ended) is killed first, with a warning: it must not outlive the child, nor
    keep multiprocessing's exit handler waiting for it.
    """
    try:
        code = aiomultiprocess.Process.run_async(unit)
    finally:
        take_down_strays(multiprocessing.current_process().name)
        watch_threads(multiprocessing.current_process().name)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


THREADS_GRACE = 1.0
"""Seconds a process that ends may wait for threads before :func:`watch_threads` names them."""


def watch_threads(owner: str) -> threading.Timer:
    """Name, :data:`THREADS_GRACE` seconds from now, the threads that still keep process
    ``owner`` from ending (:func:`warn_of_threads`); nothing is said if it ended by then.

    Python's exit waits for every thread that is no daemon (the idle workers of a thread
    pool end by themselves meanwhile). One a plug-in started that never ends kept the process
    until the runtime config's ``stop_timeout`` killed it, and the run failed as a process
    that "did not stop within 10 s", with nothing naming the thread.
    """
    timer = threading.Timer(THREADS_GRACE, warn_of_threads, args=(owner,))
    timer.daemon = True  # (it ends with the process)
    timer.start()
    return timer


def warn_of_threads(owner: str) -> list[str]:
    """Log a warning naming each thread that is no daemon and still runs in process
    ``owner``, which is ending (a plug-in's: palaestra's own have ended); returns their
    names."""
    main, me = threading.main_thread(), threading.current_thread()
    left = [
        t.name
        for t in threading.enumerate()
        if t is not main and t is not me and not t.daemon and t.is_alive()
    ]
    if left:
        LOG.warning(
            "%s: %s, which a plug-in started and which is no daemon thread, still runs at its "
            "end: the process ends when it does, or is killed after the runtime config's "
            "stop_timeout. A plug-in must end the threads it starts (in teardown() or "
            "shutdown()), or start them with daemon=True.",
            owner,
            ", ".join(f"thread {name!r}" for name in left),
        )
    return left


def _bootstrap_fork(unit: Unit, parent: int, close_fds: Sequence[int]) -> None:
    """In a freshly forked child: forget the parent's event loop and signal wake-up pipe (a
    signal here must not wake the parent), close the siblings' liveness pipes, die with the
    parent, then run the child. The parent's ZMQ context is never touched (pyzmq ignores
    contexts inherited across fork).
    """
    guard_console()  # the executor's console may be closed or gone: never fail on it
    guard_signal_calls(multiprocessing.current_process().name)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupts.leave_to_executor()
    asyncio.events._set_running_loop(None)
    for fd in close_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    die_with_parent(parent)
    become_subreaper()  # a plug-in's orphaned processes come to us, not to init
    bootstrap(unit)


def _bootstrap_fresh(
    target: Callable[..., Any],
    spec: bytes,
    alive: multiprocessing.connection.Connection,
    parent: int | None,
    method: str,
    leaving: int | None,
) -> None:
    """In a child started by forkserver or spawn: what :func:`_bootstrap_fork` does, for a
    process that inherited only the pipe to the undertaker (``leaving``).

    Ctrl-C is ignored before ``spec`` is unpickled (which imports the plug-in modules);
    ``multiprocessing``'s default becomes ``method``, so that a plug-in's own processes do
    not fork from a process that may use CUDA. ``parent`` is None where the fork server is the
    parent: the watchdog pipe alone ties the child to the process that asked for it.
    """
    interrupts.leave_to_executor()  # Ctrl-C (a closed terminal) is the executor's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    name = multiprocessing.current_process().name
    guard_console()
    guard_signal_calls(name)
    multiprocessing.set_start_method(method, force=True)
    undertaker.adopt(leaving)
    die_with_parent(parent)
    become_subreaper()
    unit = Unit(target=target, args=(pickle.loads(spec), alive), kwargs={}, namespace=None)
    bootstrap(unit)


@contextlib.contextmanager
def without_main() -> Iterator[None]:
    """While a child starts by forkserver or spawn, hide this process's ``__main__`` from
    :mod:`multiprocessing`, which would run the caller's script again in the child (a script
    without ``if __name__ == "__main__"`` would start its experiment again there). Children
    need nothing of it: their components come from importable modules."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def die_with_parent(parent: int | None) -> None:
    """Be killed (SIGKILL) when the parent dies; exit at once if ``parent`` (the pid it must
    have; None: not checked) has died already."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pipe watchdog still works
        pass
    if parent is not None and os.getppid() != parent:  # it died before we could ask
        os._exit(70)


ChildMain = Callable[[ChildSpec, multiprocessing.connection.Connection], Coroutine[Any, Any, int]]
"""The coroutine a child runs (:func:`palaestra.core.supervision.runtime.child_main`); returns its
exit code."""


def preload(modules: Sequence[str]) -> None:
    """Import ``modules`` here, so children forked from this process share them.

    A module that fails to import is left to the child that needs it: it reports the error.
    """
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - reported by the process that uses it
            LOG.debug("could not preload %s", name)


class Supervisor:
    """Starts children, turns their ends into events, and stops them: SIGTERM, grace, SIGKILL."""

    def __init__(
        self,
        on_exit: Callable[[Child, ChildExit], None],
        main: ChildMain,
        start_method: str = FORK,
    ) -> None:
        self.children: dict[str, Child] = {}
        self._on_exit = on_exit
        self._main = main
        self.start_method = start_method

    def spawn(self, spec: ChildSpec, launched: Launched | None = None) -> Child:
        """Start a child for ``spec``: forked (or by the start method's server), or
        ``launched`` elsewhere (see :mod:`palaestra.core.supervision.launch`)."""
        loop = asyncio.get_running_loop()
        alive_r, alive_w = multiprocessing.Pipe(duplex=False)
        process: _ChildProcess | Launched
        if launched is None:
            siblings = [c.alive_w.fileno() for c in self.running()]
            siblings += [fd for c in self.running() if c.launched for fd in c.process.held]
            process = _ChildProcess(
                target=self._main,
                spec=spec,
                alive=alive_r,
                close_fds=[*siblings, alive_w.fileno()],
                method=self.start_method,
            )
        else:  # its liveness pipe is its stdin, which the launcher holds
            process = launched
        process.start()
        alive_r.close()
        child = Child(spec=spec, process=process, alive_w=alive_w, ready=loop.create_future())
        self.children[spec.name] = child
        loop.add_reader(process.sentinel, self._ended, child)
        LOG.debug("started %s (pid %s)", spec.name, process.pid)
        return child

    def _ended(self, child: Child) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(child.process.sentinel)
        child.process.close_sentinel()
        code = child.process.exitcode
        if code is None:  # a sentinel pipe reads EOF a moment before the exit status is there
            child.process.join(1.0)
            code = child.process.exitcode
        child.exit_code = code if code is not None else -signal.SIGKILL
        child.alive_w.close()
        child.exited.set()
        host = child.process.host if child.launched else ""
        if not child.ready.done():
            where = f" on host {host}" if host else ""
            child.ready.set_exception(
                ChildGone(
                    f"{child.name}{where} ended before it was ready (exit code {child.exit_code})"
                )
            )
            child.ready.exception()  # mark retrieved: the exit event carries the error
        LOG.debug("%s ended with %s", child.name, child.exit_code)
        self._on_exit(child, ChildExit(child.name, child.spec.role, child.exit_code, host))

    def running(self) -> list[Child]:
        return [c for c in self.children.values() if not c.exited.is_set()]

    async def stop_all(self, grace: float = 3.0, children: Sequence[Child] | None = None) -> None:
        """Terminate running children (all, or those given): SIGTERM, ``grace`` s, SIGKILL."""
        children = [c for c in (children or self.running()) if not c.exited.is_set()]
        for child in children:
            child.stopping = True
            _signal(child, signal.SIGTERM)
        await self.wait(children, grace)
        for child in [c for c in children if not c.exited.is_set()]:
            LOG.warning("%s ignored SIGTERM for %.1f s; killing it", child.name, grace)
            _signal(child, signal.SIGKILL)
        await self.wait(children, grace)

    @staticmethod
    async def wait(children: Sequence[Child], timeout: float) -> bool:
        """Wait until all ``children`` ended; False if ``timeout`` passed first."""
        pending = [c.exited.wait() for c in children if not c.exited.is_set()]
        if not pending:
            return True
        gathered = asyncio.gather(*pending)
        try:
            async with liveness.seen_timeout(timeout):  # (a whole run's stop: not late)
                await gathered
        except TimeoutError:
            return False
        finally:  # a wait cancelled from outside (a failed run's teardown) leaves it unread
            if gathered.done() and not gathered.cancelled():
                gathered.exception()
        return True

    def kill_all_now(self) -> None:
        """Last resort (second Ctrl-C, parent death): SIGKILL everything, no waiting."""
        for child in self.running():
            _signal(child, signal.SIGKILL)


class ChildGone(RuntimeError):
    pass


def _signal(child: Child, signum: int) -> None:
    if not child.exited.is_set():
        child.process.signal(signum)


def watch_parent(alive: multiprocessing.connection.Connection) -> None:
    """End this process at once when the parent's end of ``alive`` closes (parent died)."""
    fd = alive.fileno()

    def watch() -> None:
        poller = select.poll()  # not select(): its fds end at 1023, a big run has more
        poller.register(fd, select.POLLIN | select.POLLHUP)
        while True:
            if poller.poll():
                try:
                    data = os.read(fd, 1)
                except OSError:
                    data = b""
                if not data:
                    take_down_strays("", wait=False)
                    os._exit(70)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def configure_child_logging(name: str, level: int) -> None:
    """Log to the inherited stderr (the executor's console), tagged with the process title."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter(f"%(asctime)s palaestra[{name}] %(levelname)s %(name)s: %(message)s")
    )
    root.addHandler(handler)
    root.setLevel(level)
