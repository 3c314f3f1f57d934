"""Runs one component in one process: its sockets, its children, its signals, its end.

The runtime owns the asyncio loop side of a component: the DEALER to its parent, the ROUTER its
children report to, the supervisor of its children, and the SIGTERM handler. It feeds every
event into the component's state machine and turns the machine's end into the process's end:
exit 0 when FINISHED, 1 with a :class:`~palaestra.core.wire.messages.Failed` sent upward on ERROR.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing.connection
import signal
import traceback
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from palaestra.core import liveness, procfs
from palaestra.core.description import limits, names
from palaestra.core.errors import PalaestraError
from palaestra.core.plugin import PluginError
from palaestra.core.procfs import set_title
from palaestra.core.supervision import interrupts
from palaestra.core.supervision.affinity import Affinity, pin
from palaestra.core.supervision.esm import ChildExit, Component, State
from palaestra.core.supervision.launch import Placement
from palaestra.core.supervision.processes import (
    Child,
    ChildSpec,
    Deferred,
    Supervisor,
    check_args,
    configure_child_logging,
    watch_parent,
)
from palaestra.core.supervision.start_methods import FORK
from palaestra.core.wire import messages as m
from palaestra.core.wire.netlink import Links, Network
from palaestra.core.wire.transport import endpoint_for

LOG = logging.getLogger(__name__)


def error_info(process: str, exc: BaseException) -> m.ErrorInfo:
    """Describe ``exc`` as data; a :class:`PluginError` reports the user's exception."""
    plugin = ""
    if isinstance(exc, PluginError) and exc.__cause__ is not None:
        plugin = exc.plugin
        exc = exc.__cause__
    if isinstance(exc, PalaestraError):  # says what is wrong itself; its traceback is ours
        return m.ErrorInfo(
            process=process,
            kind=type(exc).__name__,
            message=exc.format_message(),
            run_exit_code=exc.exit_code,
        )
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return m.ErrorInfo(
        process=process, kind=type(exc).__name__, message=str(exc), traceback=tb, plugin=plugin
    )


class Runtime:
    """The process-side machinery of one :class:`Component`.

    Args:
        component: The component to run.
        spec: How this process was started (None for the executor, which has no parent).
        run_dir: Private directory for this run's ipc endpoints.
        log_level: Passed on to children.
        start_method: How children start (fork, forkserver or spawn; see
            :mod:`palaestra.core.supervision.start_methods`), passed on to them for theirs.
        placement: Where this process's children run, child by child (None: all started by
            ``start_method``; see :mod:`palaestra.core.supervision.launch`).
        network: This process's host and the run's keys, for a run across hosts (a child takes
            its spec's; see :mod:`palaestra.core.wire.netlink`); None: local links only.
        affinity: The CPUs of the run's workers, which a child spawned for a worker runs on
            unless placed elsewhere (see :mod:`palaestra.core.supervision.affinity`); None:
            where the system puts it.
    """

    def __init__(
        self,
        component: Component,
        *,
        run_dir: str,
        spec: ChildSpec | None = None,
        log_level: int = logging.WARNING,
        start_method: str = FORK,
        placement: Placement | None = None,
        network: Network | None = None,
        affinity: Affinity | None = None,
    ) -> None:
        self.component = component
        self.placement = placement
        self.affinity = affinity
        self.spec = spec
        self.run_dir = run_dir
        self.log_level = log_level
        self.start_method = start_method
        self.ctx = zmq.asyncio.Context()
        self.network = spec.network if spec is not None else network
        self.links = Links(self.network, zmq.Context.shadow(self.ctx.underlying))
        self.supervisor = Supervisor(self._child_exit, child_main, start_method)
        self.parent: zmq.asyncio.Socket | None = None
        self.children_socket: zmq.asyncio.Socket | None = None
        self.children_endpoint = ""
        self._pending: dict[str, asyncio.Future[m.Message]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._parent_reader: asyncio.Task[Any] | None = None
        self._ended = asyncio.Event()
        component.add_listener(self._state_changed)

    @property
    def name(self) -> str:
        return self.component.name

    # --- sockets -----------------------------------------------------------------------

    def socket(self, kind: int) -> zmq.asyncio.Socket:
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 2000)
        return sock

    def bind(self, kind: int, role: str) -> tuple[zmq.asyncio.Socket, str]:
        """Bind a new socket of ``kind`` on a private ipc endpoint (and a CURVE tcp one, in a
        run across hosts); returns it and the endpoint to announce."""
        sock = self.socket(kind)
        endpoint = endpoint_for(self.run_dir, names.endpoint(self.name, role))
        return sock, self.links.bind(sock, endpoint)

    async def send_parent(self, message: m.Msg) -> None:
        if self.parent is not None:
            await self.parent.send(m.encode(message))

    # --- children ----------------------------------------------------------------------

    def spawn(
        self,
        name: str,
        role: str,
        component: type[Component] | Deferred,
        args: msgspec.Struct,
        worker: int | None = None,
    ) -> Child:
        """Start a child running ``component(name=name, **args)`` that reports to this process
        (a :class:`Deferred` component is imported, and its arguments checked, in the child);
        ``worker``: the rollout worker whose CPU it shares, where the runtime pins workers (see
        :mod:`palaestra.core.supervision.affinity`)."""
        if not isinstance(component, Deferred):
            check_args(component, args)
        if self.children_socket is None:
            self.children_socket, self.children_endpoint = self.bind(zmq.ROUTER, "children")
            self.start_task(self._read_children(self.children_socket))
        spec = ChildSpec(
            name=name,
            role=role,
            component=component,
            args=args,
            run_dir=self.run_dir,
            parent_endpoint=self.children_endpoint,
            log_level=self.log_level,
            start_method=self.start_method,
            network=self.network,
        )
        launched = None if self.placement is None else self.placement.launch(spec)
        if launched is None and self.affinity is not None and worker is not None:
            spec = replace(spec, cpus=self.affinity.of_worker(worker))  # (a child of ours)
        return self.supervisor.spawn(spec, launched)

    async def request(self, child: str, message: m.Msg) -> m.Message:
        """Send ``message`` to ``child`` and wait for its next message (its answer)."""
        future: asyncio.Future[m.Message] = asyncio.get_running_loop().create_future()
        self._pending[child] = future
        await self.send_child(child, message)
        return await future

    async def send_child(self, child: str, message: m.Msg) -> None:
        assert self.children_socket is not None
        await self.children_socket.send_multipart([child.encode(), m.encode(message)])

    async def _read_children(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            sender_b, payload = await sock.recv_multipart()
            sender = sender_b.decode()
            message = m.decode(payload)
            child = self.supervisor.children.get(sender)
            if isinstance(message, m.Ready):
                if child is not None and not child.ready.done():
                    child.ready.set_result(dict(message.endpoints))
                continue
            if isinstance(message, m.Busy):
                if child is not None:
                    child.busy = message.call
                continue
            if isinstance(message, m.Failed):
                await sock.send_multipart([sender_b, m.encode(m.Shutdown(reason="ack"))])
                self._reject(sender, message.error)
                self.component.fail(message.error)
                continue
            if isinstance(message, m.EpisodeEnded | m.EpisodeRows):  # news, not an answer
                if self.component.handler_for(message) is not None:
                    await self.component.dispatch(message)
                continue
            future = self._pending.pop(sender, None)
            if future is not None and not future.done():
                future.set_result(message)
            elif self.component.handler_for(message) is not None:
                await self.component.dispatch(message, sender=sender)
            else:  # the answer to a request given up on (the run is failing): drop it
                LOG.debug(
                    "%s: dropped a late %s from %s", self.name, type(message).__name__, sender
                )

    def _reject(self, sender: str, error: m.ErrorInfo) -> None:
        future = self._pending.pop(sender, None)
        if future is not None and not future.done():
            future.set_exception(ComponentFailed(error))
            future.exception()

    def _child_exit(self, child: Child, event: ChildExit) -> None:
        if child.stopping and event.exit_code in (0, -signal.SIGTERM, -signal.SIGKILL):
            return
        if event.exit_code == 0:
            event = ChildExit(child.name, child.spec.role, 0)
            error = m.ErrorInfo(
                process=child.name, kind="ProcessEnded", message=f"{child.name} ended unexpectedly"
            )
            self._reject(child.name, error)
            self.component.fail(error)
            return
        self._reject(
            child.name,
            m.ErrorInfo(process=child.name, kind="ProcessDied", message=event.describe()),
        )
        self.component.on_child_exit(event)

    async def wait_ready(
        self, children: list[Child], timeout: float, setting: str = ""
    ) -> list[dict[str, str]]:
        """The endpoints each child announced; raises if one ended, or is late: then the error
        names the late children and ``setting``, the runtime-config key of ``timeout``."""
        futures = [c.ready for c in children]
        with contextlib.suppress(TimeoutError):
            async with liveness.seen_timeout(timeout):  # (a run stopped as a whole: not late)
                await asyncio.wait(futures)
        if not all(f.done() for f in futures):
            late = [c.name for c in children if not c.ready.done()]
            raise self.late_error(late, "start", timeout, setting)
        return [f.result() for f in futures]

    def late_error(
        self, late: list[str], doing: str, seconds: float, setting: str = ""
    ) -> ComponentFailed:
        """The failure of the children named ``late``, which did not ``doing`` within
        ``seconds`` (the runtime-config key ``setting``): :func:`timeout_error`, but where one
        of them is stopped (SIGSTOP, a debugger: more time would not help), that one, named
        so as the liveness judge names a stopped process."""
        for name in late:
            child = self.supervisor.children.get(name)
            pid = None if child is None else child.pid
            if pid is not None and procfs.state(pid) in ("T", "t"):
                limit = f" (the runtime config's {setting})" if setting else ""
                message = (
                    f"{name} (pid {pid}) is stopped (SIGSTOP, a job scheduler or a debugger "
                    f"holds it) and did not {doing} within {seconds:g} s{limit}"
                )
                return ComponentFailed(m.ErrorInfo(process=name, kind="Stopped", message=message))
        calls = {}
        for name in late:
            child = self.supervisor.children.get(name)
            if child is not None and child.busy:
                calls[name] = child.busy
        return timeout_error(late, doing, seconds, setting, calls)

    async def shutdown_children(
        self, children: list[Child], reason: str, timeout: float
    ) -> list[str]:
        """Send ``Shutdown`` to ``children`` and wait; returns the names still running."""
        for child in children:
            child.stopping = True
            if child.ready.done() and not child.ready.exception() and not child.exited.is_set():
                await self.send_child(child.name, m.Shutdown(reason=reason))
        await Supervisor.wait(children, timeout)
        return [c.name for c in children if not c.exited.is_set()]

    async def stop_children(
        self, timeout: float = limits.CHILDREN_STOP_TIMEOUT, grace: float = limits.KILL_GRACE
    ) -> None:
        """Ask every running child to shut down, wait, then terminate stragglers."""
        if await self.shutdown_children(self.supervisor.running(), "stop", timeout):
            await self.supervisor.stop_all(grace)

    # --- tasks and state ---------------------------------------------------------------

    def start_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` alongside; an exception in it fails the component."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, ComponentFailed):
                self.component.fail(exc.error)
            else:
                self.component.fail(error_info(self.name, exc))

    def _state_changed(self, state: State) -> None:
        if state in (State.FINISHED, State.ERROR):
            self._ended.set()

    # --- main loop ---------------------------------------------------------------------

    async def run(self) -> int:
        """Run the component until it ends; returns the process exit code."""
        loop = asyncio.get_running_loop()
        interrupts.add_handler(loop, signal.SIGTERM, self._signalled)
        try:
            if self.spec is not None:
                self.start_task(liveness.beating())
                self.parent = self.socket(zmq.DEALER)
                self.parent.setsockopt(zmq.IDENTITY, self.name.encode())
                self.links.connect(self.parent, self.spec.parent_endpoint)
            self.component.start()
            endpoints = await self.component.setup(self)
            await self.send_parent(m.Ready(name=self.name, endpoints=endpoints or {}))
            if self.parent is not None:
                self._parent_reader = self.start_task(self._read_parent(self.parent))
            await self._ended.wait()
        except ComponentFailed as exc:
            self.component.fail(exc.error)
        except Exception as exc:  # noqa: BLE001 - process boundary: report, never lose the error
            self.component.fail(error_info(self.name, exc))
        return await self._end()

    def _signalled(self, signum: int) -> None:
        LOG.info("%s received %s", self.name, signal.Signals(signum).name)
        outcome = self.component.on_signal(signum)
        if outcome is not None:
            self.start_task(_awaited(outcome))

    async def _read_parent(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            message = m.decode(await sock.recv())
            reply = await self.component.dispatch(message)
            if reply is not None:
                await sock.send(m.encode(reply))

    async def _end(self) -> int:
        """Report a failure upward at once, hand over what was produced, then clean up:
        teardown, children, sockets."""
        if self._parent_reader is not None:
            self._parent_reader.cancel()
        reported = await self._report_if_failed()
        if self.component.state is State.ERROR and self.spec is not None:
            await self._hand_over()
        late: m.ErrorInfo | None = None  # a teardown that failed after the component finished
        try:
            await self.component.teardown()
        except Exception as exc:  # noqa: BLE001 - teardown of user code at the boundary
            if self.component.state is State.FINISHED:  # (its work done: the process fails)
                late = error_info(self.name, exc)
            else:
                self.component.fail(error_info(self.name, exc))
        if self.supervisor.running():
            brisk = 3.0 if self.component.state is State.ERROR else 1.0  # broken code: be brisk
            await self.stop_children(
                timeout=limits.CHILDREN_STOP_TIMEOUT / brisk, grace=limits.KILL_GRACE / brisk
            )
        for task in list(self._tasks):
            task.cancel()
        if not reported:  # the teardown itself failed
            reported = await self._report_if_failed()
        if late is not None and self.parent is not None:
            await self._report_failure(late)
        self.links.close()
        self.ctx.destroy(linger=1000)
        return 1 if self.component.state is State.ERROR or late is not None else 0

    async def _hand_over(self) -> None:
        """A failed process still hands the rows it produced to the writer: its step loop
        stops as on a clean stop (pushing its last rows), within ``STOP_TIMEOUT``. Most
        failures are a peer's (it stopped answering), not this process's own."""
        try:
            async with liveness.seen_timeout(limits.STOP_TIMEOUT):
                await self.component.close()
        except Exception as exc:  # noqa: BLE001 - best effort: the failure is reported already
            LOG.debug("%s: could not hand over its last rows: %r", self.name, exc)

    async def watch_liveness(self, answer_timeout: float, store_timeout: float) -> None:
        """Fail (raise), naming it, when a child that is ready and not being stopped looks
        frozen (see :mod:`palaestra.core.liveness`); it is killed at once, so nobody waits
        for it."""
        judge = liveness.Judge(self.run_dir, answer_timeout, store_timeout)
        while True:
            await asyncio.sleep(liveness.BEAT_SECONDS)
            now = judge.looks.look()
            for child in list(self.supervisor.children.values()):
                pid = child.pid
                if pid is None:  # elsewhere: its file is not here either
                    continue
                if child.exited.is_set():
                    judge.forget(pid)
                    continue
                if child.stopping or not child.ready.done():
                    continue
                verdict = judge.verdict(child.name, pid, now)
                if verdict is not None:
                    child.stopping = True  # its end is ours, not news
                    liveness.kill(pid)
                    raise ComponentFailed(
                        m.ErrorInfo(process=child.name, kind=verdict.kind, message=verdict.message)
                    )

    async def _report_if_failed(self) -> bool:
        error = self.component.error
        if self.component.state is not State.ERROR or error is None:
            return False
        if self.parent is not None:
            await self._report_failure(error)
        return True

    async def _report_failure(self, error: m.ErrorInfo) -> None:
        """Send ``Failed`` upward and wait (briefly) for the parent's acknowledgement."""
        assert self.parent is not None
        await self.parent.send(m.encode(m.Failed(error=error)))
        try:
            async with liveness.seen_timeout(limits.ACK_TIMEOUT):
                await self.parent.recv()
        except TimeoutError:
            LOG.debug("%s: parent did not acknowledge the failure report", self.name)


def timeout_error(
    processes: list[str],
    doing: str,
    seconds: float,
    setting: str = "",
    calls: dict[str, str] | None = None,
) -> ComponentFailed:
    """``processes`` did not ``doing`` within ``seconds`` (the runtime-config ``setting``);
    ``calls``: the plug-in call that some of them are in, by process (see
    :class:`~palaestra.core.wire.messages.Busy`)."""
    message = f"{', '.join(processes)} did not {doing} within {seconds:g} s"
    calls = calls or {}
    said = [f"{name}'s {calls[name]}" for name in processes if name in calls]
    if len(processes) == 1 and said:
        said = [f"its {calls[processes[0]]}"]
    if said:
        message += f": {', '.join(said)} did not return"
    if setting:
        message += f" (the runtime config's {setting}: raise it if that is too short)"
    return ComponentFailed(m.ErrorInfo(process=processes[0], kind="Timeout", message=message))


async def _awaited(awaitable: Any) -> None:
    await awaitable


class ComponentFailed(Exception):
    def __init__(self, error: m.ErrorInfo) -> None:
        self.error = error
        super().__init__(error.describe())


async def child_main(spec: ChildSpec, alive: multiprocessing.connection.Connection) -> int:
    """Entry point of every child process (run by aiomultiprocess in the child's loop);
    returns the exit code."""
    set_title(spec.name)
    watch_parent(alive)
    try:
        liveness.begin(spec.run_dir, spec.name)  # the executor's judge reads them
    except OSError as exc:  # a run dir not on this host (a launched child): not judged
        LOG.debug("%s: no liveness marks: %s", spec.name, exc)
    interrupts.leave_to_executor()  # Ctrl-C (a closed terminal) is the executor's to handle
    configure_child_logging(spec.name, spec.log_level)
    pin(spec.cpus)  # (every thread it has, and those it starts)
    try:
        component = spec.build()
    except Exception as exc:  # noqa: BLE001 - report construction errors like any other
        return await _report_failed_start(spec, exc)
    runtime = Runtime(
        component,
        spec=spec,
        run_dir=spec.run_dir,
        log_level=spec.log_level,
        start_method=spec.start_method,
    )
    return await runtime.run()


async def _report_failed_start(spec: ChildSpec, exc: BaseException) -> int:
    """Report a component that could not even be constructed; returns the exit code, 1."""
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, spec.name.encode())
    sock.setsockopt(zmq.LINGER, 1000)
    links = Links(spec.network, zmq.Context.shadow(ctx.underlying))
    links.connect(sock, spec.parent_endpoint)
    await sock.send(m.encode(m.Failed(error=error_info(spec.name, exc))))
    with contextlib.suppress(TimeoutError):
        async with liveness.seen_timeout(limits.ACK_TIMEOUT):
            await sock.recv()
    links.close()
    ctx.destroy(linger=1000)
    return 1
