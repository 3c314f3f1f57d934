"""The per-step path of a component: a blocking loop on synchronous sockets, in its own thread.

A round trip through ``zmq.asyncio`` costs about twice what it costs with blocking sockets, and
the per-step path is nothing but round trips. So the processes on that path (environment,
Muscle, Brain, simulation controller) run it in one thread with plain pyzmq sockets, while their
asyncio thread keeps the state machine, the parent's messages, child exits, signals and
watchdogs.

Rules: hot sockets are created, used and closed by the hot thread only; the hot thread talks to
the component only through :meth:`HotLoop.call` (which runs a callable in the asyncio thread).
A stop request (or a posted item) reaches the loop through a pipe that every wait of the loop
watches; an exception in the loop fails the component like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import queue
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import zmq

from palaestra.core.liveness import step_begins, step_ends, waited, waiting
from palaestra.core.supervision.esm import ComponentRuntime
from palaestra.core.wire.channel import Channel, Listener, Selector
from palaestra.core.wire.records import FAILED_FLUSH_SECONDS, RowSink

_STOP = object()
MAX_POLL_MS = 2**31 - 1
"""The longest timeout ``select.poll`` takes (a C int of milliseconds): a longer one raises
``OverflowError``."""

GC_THRESHOLDS = (50_000, 20, 100)
"""The garbage collector's thresholds in a process with a hot loop (Python's default: 700, 10,
10). A step allocates many short-lived containers (rows, messages, plug-in objects) and a
Memory keeps every transition: with the default, the collector ran every few steps and
re-scanned the growing memory, a quarter of the per-step CPU time of several games per worker
(``benchmarks/vector_envs.py``). Cycles are still collected, just in larger batches."""


class Stopped(Exception):
    """Raised inside the hot loop when the component asked it to stop."""


class HotLoop:
    """Runs ``target(loop)`` in a thread; ``target`` uses :meth:`socket` and :meth:`wait`."""

    def __init__(self, runtime: ComponentRuntime, name: str) -> None:
        self.runtime = runtime
        self.name = name
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.shadow(runtime.ctx.underlying)
        self._aio = asyncio.get_running_loop()
        self.stop_fd, self._stop_writer = os.pipe()
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # resolves when the loop ended; carries the loop's exception if it failed
        self.done: asyncio.Future[None] = self._aio.create_future()
        self._sockets: list[zmq.Socket[bytes]] = []
        self._closing: list[Channel | Listener] = []
        self._thread: threading.Thread | None = None
        self._sleeper: Any = None  # a poll object on the stop pipe, made by the first sleep

    # --- in the hot thread --------------------------------------------------------------

    def socket(self, kind: int) -> zmq.Socket[bytes]:
        sock: zmq.Socket[bytes] = self.ctx.socket(kind)
        # long enough to hand the last rows to a live writer, short enough not to hold up
        # the end of a run whose writer is gone
        sock.setsockopt(zmq.LINGER, 500)
        self._sockets.append(sock)
        return sock

    def bind(self, kind: int, endpoint: str) -> tuple[zmq.Socket[bytes], str]:
        """A socket of ``kind`` bound on ``endpoint`` (and a CURVE tcp endpoint in a run across
        hosts: :mod:`palaestra.core.wire.netlink`), with the endpoint to announce. Called in the
        asyncio thread before :meth:`start`: the socket then moves to the hot thread."""
        sock = self.socket(kind)
        try:
            return sock, self.runtime.links.bind(sock, endpoint)
        except BaseException:
            self._sockets.remove(sock)
            sock.close(linger=0)  # an open socket would keep the context from ending
            raise

    def dial(self, sock: zmq.Socket[bytes], endpoint: str) -> None:
        """Connect ``sock`` to an announced ``endpoint`` (ipc on this host, else CURVE tcp)."""
        self.runtime.links.connect(sock, endpoint)

    def poller(self, *sockets: Any) -> Callable[[], list[Any]]:
        """A function that blocks until one of ``sockets`` is readable (raises on stop).

        ``sockets`` are ZMQ sockets or anything with a ``fileno()`` (a channel, a listener).
        """
        poller = zmq.Poller()
        for sock in sockets:
            poller.register(sock, zmq.POLLIN)
        poller.register(self.stop_fd, zmq.POLLIN)
        stop = self.stop_fd
        # pyzmq reports what is not a ZMQ socket by its file descriptor
        by_fd = {s.fileno(): s for s in sockets if not isinstance(s, zmq.Socket)}
        channels = [s for s in sockets if isinstance(s, Channel)]

        def wait() -> list[Any]:
            held = [c for c in channels if c.pending()]
            if held:  # (messages a read took together: no poll would find them)
                return held
            working = waiting()
            ready = [s for s, _ in poller.poll()]
            waited(working)
            if stop in ready:
                self._control()
            return [by_fd.get(s, s) for s in ready] if by_fd else ready

        return wait

    def own(self, item: Listener) -> Listener:
        """Close ``item`` when the loop ends (a listener bound before the loop started)."""
        self._closing.append(item)
        return item

    def connect(self, endpoint: str, peer: str) -> Channel:
        """A :class:`~palaestra.core.wire.channel.Channel` to ``peer``'s listener at
        ``endpoint``."""
        channel = self.runtime.links.channel(
            endpoint, self.name, self.stop_fd, self._control, peer
        )
        self._closing.append(channel)
        return channel

    def accept(self, listener: Listener, wait: bool = True) -> Channel | None:
        """The next peer that connects to ``listener`` (raises on stop); without ``wait``,
        only one that is already pending, else None."""
        channel = listener.accept(self.stop_fd, self._control, wait)
        if channel is not None:
            self._closing.append(channel)
        return channel

    def selector(self) -> Selector:
        """A :class:`~palaestra.core.wire.channel.Selector` that a stop request interrupts."""
        return Selector(self.stop_fd, self._control)

    def idle(self) -> NoReturn:
        """Wait for the stop (a peer hung up: its parent reports why; raises Stopped)."""
        while True:
            self._control()

    def receiver(self, sock: zmq.Socket[bytes]) -> Callable[[], bytes]:
        """A blocking ``recv`` on ``sock`` that a stop request interrupts (raises Stopped)."""
        wait = self.poller(sock)
        recv = sock.recv

        def receive() -> bytes:
            while sock not in wait():
                pass
            return recv()

        return receive

    def sleep(self, seconds: float) -> None:
        """Sleep about ``seconds`` (whole milliseconds, rounded down: never longer), or until
        a stop request (raises Stopped); a pacer's coarse wait (:mod:`palaestra.core.pacing`).
        A wait longer than ``poll`` takes (:data:`MAX_POLL_MS`, 24.8 days: a ``step_rate``
        below 1 step in that) is slept in parts; an endless one (``inf``) until the stop."""
        if self._sleeper is None:
            self._sleeper = select.poll()
            self._sleeper.register(self.stop_fd, select.POLLIN)
        left = seconds * 1000  # milliseconds, a float: inf stays inf
        while left >= 1:
            part = int(min(left, MAX_POLL_MS))
            working = waiting()
            woken = self._sleeper.poll(part)
            waited(working)
            if woken:
                self._control()
                return
            left -= part

    def command(self) -> Any:
        """Block until the asyncio thread :meth:`post`-s something; raises on stop."""
        return self._control()

    def _control(self) -> Any:
        """Take the next item posted to the loop (blocking); raises Stopped on a stop."""
        working = waiting()
        os.read(self.stop_fd, 1)  # one byte per item
        waited(working)
        payload = self._items.get()
        if payload is _STOP:
            os.write(self._stop_writer, b"s")  # every later wait sees the stop too
            self._items.put(_STOP)
            raise Stopped
        return payload

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` in the asyncio thread (thread-safe, does not wait)."""
        self._aio.call_soon_threadsafe(function, *args)

    # --- in the asyncio thread ----------------------------------------------------------

    def start(self, target: Callable[[HotLoop], None]) -> None:
        gc.freeze()  # what the process holds before its loop (modules, plug-ins) is never garbage
        gc.set_threshold(*GC_THRESHOLDS)
        self._thread = threading.Thread(
            target=self._run, args=(target,), name=f"hot-{self.name}", daemon=True
        )
        self._thread.start()

    def _run(self, target: Callable[[HotLoop], None]) -> None:
        error: BaseException | None = None
        step_begins()
        try:
            target(self)
        except (Stopped, zmq.ContextTerminated):
            pass
        except BaseException as exc:  # noqa: BLE001 - reported to the component by the asyncio thread
            error = exc
        finally:
            # The runtime's context does not know these sockets (they live on a shadow of
            # it): close them here, or terminating the context would wait for them forever.
            for sock in self._sockets:
                sock.close()  # with its linger: pushes still queued get their chance
            for closing in self._closing:
                closing.close()
            step_ends()
        self._aio.call_soon_threadsafe(self._finished, error)

    def _finished(self, error: BaseException | None) -> None:
        os.close(self.stop_fd)
        os.close(self._stop_writer)
        if self.done.done():
            return
        if error is not None:
            self.done.set_exception(error)
        else:
            self.done.set_result(None)

    def post(self, item: Any) -> None:
        """Hand ``item`` to the hot thread (it receives it from :meth:`command`)."""
        self._items.put(item)
        os.write(self._stop_writer, b"i")

    async def stop(self) -> None:
        """Ask the loop to stop and wait until it did (its sockets are then free to use)."""
        if self._thread is not None and not self.done.done():
            self.post(_STOP)
            with contextlib.suppress(Exception):  # the failure was reported through `done`
                await asyncio.shield(self.done)


@contextmanager
def closing_producer(sink: RowSink, producer: str, *also: RowSink) -> Iterator[None]:
    """Around a producer's hot loop: on stop, push the last rows (of ``also``, the producer's
    other sinks on the same socket, first) and close the producer, waiting for the writer; on
    failure, push what the writer takes in a few seconds (see :meth:`RowSink.close`)."""
    try:
        yield
    except Stopped:
        for other in also:
            other.flush()
        sink.close(producer)
        raise
    except BaseException:
        for other in also:
            other.flush(timeout=FAILED_FLUSH_SECONDS)
        sink.close(producer, failed=True)
        raise


def run_hot(
    runtime: ComponentRuntime,
    name: str,
    target: Callable[[HotLoop], None],
    loop: HotLoop | None = None,
) -> HotLoop:
    """Start ``target`` in a hot loop (``loop``, if sockets were bound on it before, else a
    new one) whose failure fails the component."""
    loop = loop or HotLoop(runtime, name)
    loop.start(target)
    runtime.start_task(_watch(loop))
    return loop


async def _watch(loop: HotLoop) -> None:
    await loop.done  # an exception here fails the component through Runtime.start_task
