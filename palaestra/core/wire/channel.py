"""Direct links for the per-step path: message-framed links between two processes, over
pipes within a host.

A ZMQ message passes two I/O threads, a third of a step's CPU time on the per-step path
(environment <-> Muscle, Muscle <-> Brain). A :class:`Channel` is a direct link instead: one
system call hands a message to the receiver, order is kept, and a full buffer blocks the sender
(backpressure, nothing dropped). The control plane (setup, episodes, failures, the store's rows)
stays on ZMQ.

A :class:`Listener` binds an ``AF_UNIX``/``SOCK_SEQPACKET`` socket inside the run's private
directory (see :mod:`palaestra.core.wire.transport`); a peer :func:`connect`-s, names itself in
its first packet and hands over the ends of two pipes with it (``SCM_RIGHTS``), one for each
direction. The messages then travel on the pipes, each as its length and its bytes (cheaper for
the kernel than a socket's packets: 9 to 10 µs a step for a chain of three processes). A peer
that names itself without pipes (a relay's socket pair, :mod:`palaestra.core.wire.netlink`)
keeps the socket: messages longer than :data:`CHUNK` travel as several packets. Every wait also
watches the hot loop's stop pipe (see :mod:`palaestra.core.supervision.hotloop`). A peer that
hangs up is not an error here: the process that ended is reported by its own parent.

A wait polls for a while before it sleeps (:class:`Poller`): where waking a process asleep on
another CPU is dear (an inter-processor interrupt, a trip through a hypervisor), a peer that
answers within :data:`SPIN_SECONDS` is met awake. It spins only while its waits are that short,
and yields the CPU between its polls.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import select
import socket
import struct
import termios
import time
from collections.abc import Callable, Iterator
from typing import Any

from palaestra.core.description.limits import SPIN_MAX_US, SPIN_US
from palaestra.core.liveness import waited, waiting

CHUNK = 1 << 16
_LAST = b"\x00"
_MORE = b"\x01"
_HELLO = b"\x02"  # a local peer's first packet: its name, with the ends of two pipes
_LENGTH = struct.Struct("<Q")  # a message's length before it, on a pipe
_READ = 1 << 16  # bytes a read from a pipe asks for (a pipe's default capacity)
_PAGE = select.PIPE_BUF  # a pipe holds its bytes in pages of this size; a write up to it is whole
_QUEUED = struct.Struct("i")  # what FIONREAD says: the bytes in a pipe
_IN = select.POLLIN
LINK_SPIN_VAR = "PALAESTRA_LINK_SPIN_US"
"""The environment variable that carries the runtime config's ``spin_us`` to a run's processes
(see :func:`spinning`; the config's own override is another, read only with the config)."""


def spin_seconds(microseconds: object) -> float:
    """``microseconds`` (a number, or its text) in seconds; the default's for one that is not a
    number from 0 to :data:`~palaestra.core.description.limits.SPIN_MAX_US` (the runtime
    config refuses those)."""
    try:
        value = float(microseconds)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        value = SPIN_US
    return (value if 0 <= value <= SPIN_MAX_US else SPIN_US) * 1e-6


SPIN_SECONDS = spin_seconds(os.environ.get(LINK_SPIN_VAR, SPIN_US))
"""How long a wait on a link polls before it sleeps (see :class:`Poller`)."""


@contextlib.contextmanager
def spinning(microseconds: float) -> Iterator[None]:
    """While it lasts, the links of this process and of the processes it starts (forked, or
    started anew: through :data:`LINK_SPIN_VAR`) spin ``microseconds`` before they sleep; then as
    before."""
    global SPIN_SECONDS
    before, variable = SPIN_SECONDS, os.environ.get(LINK_SPIN_VAR)
    SPIN_SECONDS = spin_seconds(microseconds)
    os.environ[LINK_SPIN_VAR] = repr(SPIN_SECONDS * 1e6)
    try:
        yield
    finally:
        SPIN_SECONDS = before
        if variable is None:
            os.environ.pop(LINK_SPIN_VAR, None)
        else:
            os.environ[LINK_SPIN_VAR] = variable


SPINS_JUDGED = 32
"""Spins whose time decides whether a :class:`Poller` spins on."""
CHAIN_SPINS = 5
"""A wait that follows at most a spin's time of work spins this many times as long (see
:class:`Poller`)."""
CONTENDED_WAITS = 256
"""Waits that sleep at once after spins that found the CPUs busy (see :class:`Poller`)."""
_clock = time.perf_counter
_ended = 0.0
"""When this process's last wait on a link ended (any link's: see :class:`Poller`)."""
_yield = os.sched_yield


class PeerGone(Exception):
    """The peer closed its end (its process ended or stopped)."""


def send_then(send: Callable[[], object], then: Callable[[], object]) -> None:
    """``send``, then ``then`` (work that waited for the message to be out, such as storing
    rows). If sending fails (a stop, a peer gone), ``then`` is still tried, so that what the
    process pushes as it stops keeps it; its own failure then is not the news: the send's is
    raised."""
    try:
        send()
    except BaseException:
        with contextlib.suppress(Exception):
            then()
        raise
    then()


class Channel:
    """One end of a connection; ``peer`` is the name of the process at the other end.

    Between two processes of one host the messages travel on a pair of pipes (the socket that
    carried the peer's name and the pipes' ends is closed then); a channel made on a socket
    alone (a relay's) sends framed packets on it. A stop request (``Stopped``) may leave a
    message half written or half read: a channel is not used after one."""

    __slots__ = (
        "sock",
        "peer",
        "_stop_fd",
        "_check_stop",
        "_poll",
        "_send_poll",
        "_r",
        "_w",
        "_buf",
        "_at",
        "_pages",
    )

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        stop_fd: int,
        check_stop: Callable[[], object],
        pipes: tuple[int, int] | None = None,
    ) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.peer = peer
        self._stop_fd = stop_fd
        self._check_stop = check_stop
        self._r, self._w = pipes if pipes is not None else (-1, -1)
        self._buf = b""  # read from the pipe: from _at on, the next message(s), not yet taken
        self._at = 0
        self._pages = 0  # the pipe's capacity in pages (for try_send)
        if pipes is not None:
            sock.close()  # (it carried the pipes: a packet sent before it closed still arrives)
            for fd in pipes:
                os.set_blocking(fd, False)
                os.set_inheritable(fd, False)  # (a program a plug-in starts does not hold them)
            self._pages = fcntl.fcntl(self._w, fcntl.F_GETPIPE_SZ) // _PAGE
            reads, writes = self._r, self._w
        else:
            reads = writes = sock.fileno()
        self._poll = Poller([(reads, _IN), (stop_fd, _IN)])
        self._send_poll = Poller([(writes, select.POLLOUT), (stop_fd, _IN)])

    def fileno(self) -> int:
        return self._r if self._r >= 0 else self.sock.fileno()

    def send(self, data: bytes) -> None:
        """Send one message; blocks (interruptibly) while the peer's buffer is full."""
        if self._w >= 0:
            self._write(_LENGTH.pack(len(data)) + data)
            return
        if len(data) <= CHUNK:  # the common case: one packet, one system call
            self._send_packet(_LAST + data)
        else:
            self._send_chunks(data)

    def try_send(self, data: bytes) -> bool:
        """Send one message if the peer's buffer takes it whole now, else nothing: False. (A
        message longer than the buffer can hold goes when the buffer is empty: its first part
        decides, the rest is then sent as :meth:`send` sends it.)"""
        if self._w >= 0:
            framed = _LENGTH.pack(len(data)) + data
            if len(framed) > _PAGE and not self._room_for(len(framed)):
                return False  # (a write that the pipe would take in part)
            try:
                written = os.write(self._w, framed)
            except BlockingIOError:
                return False
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise PeerGone(self.peer) from exc
            if written < len(framed):  # (longer than the pipe: see above)
                self._write(framed, written)
            return True
        first = _LAST + data if len(data) <= CHUNK else _MORE + data[:CHUNK]
        try:
            self.sock.send(first)
        except BlockingIOError:
            return False
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise PeerGone(self.peer) from exc
        if len(data) > CHUNK:
            self._send_chunks(data[CHUNK:])
        return True

    def ready(self) -> bool:
        """Whether a message (or the peer's hang-up) is there: :meth:`recv` would not block
        for it. A stop request raises ``Stopped`` (through ``check_stop``)."""
        if self.pending():
            return True
        ready = False
        for fd, _ in self._poll.wait(0):
            if fd == self._stop_fd:
                self._check_stop()
            else:
                ready = True
        return ready

    def pending(self) -> bool:
        """Whether a whole message was read from the pipe already (it is not in the pipe for a
        poll to find)."""
        buf, at = self._buf, self._at
        left = len(buf) - at  # (none, mostly)
        return left >= 8 and left >= _LENGTH.unpack_from(buf, at)[0] + 8

    def _room_for(self, size: int) -> bool:
        """Whether the pipe takes ``size`` bytes at once now (counted in its pages, the last of
        what it holds maybe part full); a message longer than the pipe, when it is empty."""
        queued: int = _QUEUED.unpack(fcntl.ioctl(self._w, termios.FIONREAD, b"\0\0\0\0"))[0]
        need = -(-size // _PAGE)
        if need >= self._pages:
            return queued == 0
        return -(-queued // _PAGE) + 1 + need <= self._pages

    def _write(self, framed: bytes, start: int = 0) -> None:
        """Write ``framed`` from ``start`` to the pipe, waiting while it is full."""
        rest: bytes | memoryview = memoryview(framed)[start:] if start else framed
        while True:
            try:
                written = os.write(self._w, rest)
            except BlockingIOError:
                _wait(self._send_poll, self._stop_fd, self._check_stop)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise PeerGone(self.peer) from exc
            if written == len(rest):
                return
            rest = memoryview(rest)[written:]  # (a view: the rest of a long message is not copied)

    def _send_chunks(self, data: bytes) -> None:
        """Send ``data`` as packets of up to :data:`CHUNK` bytes, the last marked so."""
        last = len(data) - CHUNK
        for start in range(0, len(data), CHUNK):
            self._send_packet((_MORE if start < last else _LAST) + data[start : start + CHUNK])

    def _send_packet(self, packet: bytes) -> None:
        while True:
            try:
                self.sock.send(packet)
                return
            except BlockingIOError:
                _wait(self._send_poll, self._stop_fd, self._check_stop)
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise PeerGone(self.peer) from exc

    def recv(self, ready: bool = False) -> bytes:
        """The next message; blocks (interruptibly) until it is there. ``ready``: a wait (a
        :class:`Selector`'s) just found it there, so it is read at once."""
        if self._r >= 0:
            return self._recv_pipe(ready)
        part = self._recv_part(ready)
        if part[:1] == _LAST:
            return part[1:]
        parts = [part[1:]]
        while True:
            part = self._recv_part()
            parts.append(part[1:])
            if part[:1] == _LAST:
                return b"".join(parts)

    def _recv_pipe(self, ready: bool) -> bytes:
        buf, at = self._buf, self._at
        while True:
            if len(buf) - at >= 8:
                end = at + _LENGTH.unpack_from(buf, at)[0] + 8
                if len(buf) >= end:
                    if len(buf) == end:
                        self._buf, self._at = b"", 0
                    else:  # (the next message(s) stay: read on from end)
                        self._at = end
                    return buf[at + 8 : end]
                if end - len(buf) > _READ:  # a long message: read into its own buffer
                    return self._recv_long(buf[at:], end - at)
            # wait first (unless a wait just found it there): see _recv_part
            if not ready:
                _wait(self._poll, self._stop_fd, self._check_stop)
            ready = False
            try:
                chunk = os.read(self._r, _READ)
            except BlockingIOError:  # woken by a stop request that was not one
                continue
            if not chunk:
                raise PeerGone(self.peer)
            buf = self._buf = buf[at:] + chunk if len(buf) > at else chunk
            at = self._at = 0

    def _recv_long(self, start: bytes, end: int) -> bytes:
        """The rest of a message ``end`` bytes long (its length included) that begins with
        ``start``, read into one buffer."""
        message = bytearray(end)
        message[: len(start)] = start
        view = memoryview(message)
        have = len(start)
        self._buf, self._at = b"", 0
        try:
            while have < end:
                _wait(self._poll, self._stop_fd, self._check_stop)
                try:
                    count = os.readv(self._r, [view[have:]])
                except BlockingIOError:
                    continue
                if not count:
                    raise PeerGone(self.peer)
                have += count
        except BaseException:
            self._buf = bytes(message[:have])  # (what was read is kept for the next recv)
            raise
        return bytes(view[8:])

    def _recv_part(self, ready: bool = False) -> bytes:
        # wait first (unless a wait just found it there): the peer is usually still at work,
        # and a failed read costs a system call and an exception
        if not ready:
            _wait(self._poll, self._stop_fd, self._check_stop)
        while True:
            try:
                part = self.sock.recv(CHUNK + 1)
            except BlockingIOError:  # woken by a stop request that was not one (a posted item)
                _wait(self._poll, self._stop_fd, self._check_stop)
                continue
            except ConnectionResetError as exc:
                raise PeerGone(self.peer) from exc
            if not part:
                raise PeerGone(self.peer)
            return part

    def close(self) -> None:
        for fd in (self._r, self._w):
            if fd >= 0:
                os.close(fd)
        self._r = self._w = -1
        self.sock.close()

    def __del__(self) -> None:
        for fd in (getattr(self, "_r", -1), getattr(self, "_w", -1)):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


class Listener:
    """A bound, listening socket that accepts named :class:`Channel` s."""

    def __init__(self, endpoint: str) -> None:
        self.path = path_of(endpoint)
        self.endpoint = endpoint
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(self.path)
        self.sock.listen(256)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(
        self, stop_fd: int, check_stop: Callable[[], object], wait: bool = True
    ) -> Channel | None:
        """Accept the next connection and read the peer's name; without ``wait``, None if no
        connection is pending (a readiness report may be stale: someone else accepted)."""
        poll = Poller([(self.sock.fileno(), _IN), (stop_fd, _IN)])
        while True:
            try:
                sock, _ = self.sock.accept()
                break
            except BlockingIOError:
                if not wait:
                    return None
                _wait(poll, stop_fd, check_stop)
        return _greeted(sock, stop_fd, check_stop)

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def connect(
    endpoint: str, name: str, stop_fd: int, check_stop: Callable[[], object], peer: str
) -> Channel:
    """Connect to a :class:`Listener` as ``name``; ``peer`` names the process listening."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path_of(endpoint))
    except OSError:
        sock.close()
        raise
    fds: list[int] = []
    try:
        fds.extend(os.pipe())  # (to the peer)
        fds.extend(os.pipe())  # (from the peer)
        socket.send_fds(sock, [_HELLO + name.encode()], [fds[0], fds[3]])  # (its ends)
    except BaseException:
        for fd in fds:
            os.close(fd)
        sock.close()
        raise
    to_peer, from_peer = (fds[0], fds[1]), (fds[2], fds[3])
    os.close(to_peer[0])  # (the peer has its own now)
    os.close(from_peer[1])
    return Channel(sock, peer, stop_fd, check_stop, pipes=(from_peer[0], to_peer[1]))


def _greeted(sock: socket.socket, stop_fd: int, check_stop: Callable[[], object]) -> Channel:
    """The channel of a connection just accepted, once its peer named itself: on the pipes it
    sent (a local peer), else on the socket (a relay's)."""
    sock.setblocking(False)
    poll = Poller([(sock.fileno(), _IN), (stop_fd, _IN)])
    while True:
        _wait(poll, stop_fd, check_stop)
        try:
            data, fds, _, _ = socket.recv_fds(sock, CHUNK + 1, 2)
        except BlockingIOError:
            continue
        except ConnectionResetError as exc:
            sock.close()
            raise PeerGone("?") from exc
        break
    if data[:1] == _HELLO:
        try:
            if len(fds) != 2:  # (the kernel drops what a process may not open: its file limit)
                raise OSError(
                    f"a link's peer sent {len(fds)} of its 2 pipe ends: this process cannot "
                    "open more files (see ulimit -n)"
                )
            peer = data[1:].decode()
        except BaseException:
            for fd in fds:
                os.close(fd)
            sock.close()
            raise
        return Channel(sock, peer, stop_fd, check_stop, pipes=(fds[0], fds[1]))
    for fd in fds:
        os.close(fd)
    if not data:
        sock.close()
        raise PeerGone("?")
    channel = Channel(sock, "?", stop_fd, check_stop)
    name = data[1:]
    if data[:1] == _MORE:  # (a name longer than a packet)
        name += channel.recv()
    channel.peer = name.decode()
    return channel


class Selector:
    """Waits until one of several channels has a message (or the loop is asked to stop)."""

    def __init__(self, stop_fd: int, check_stop: Callable[[], object]) -> None:
        self._stop_fd = stop_fd
        self._check_stop = check_stop
        self._poll = Poller([(stop_fd, _IN)])
        self._by_fd: dict[int, Any] = {}
        self._channels: list[Channel] = []  # (whose read may have taken several messages)

    def add(self, item: Any) -> None:
        fd = item.fileno()
        self._by_fd[fd] = item
        self._poll.add(fd, _IN)
        if isinstance(item, Channel):
            self._channels.append(item)

    def discard(self, item: Any) -> None:
        fd = item.fileno()
        if self._by_fd.pop(fd, None) is not None:
            self._poll.discard(fd)
            if isinstance(item, Channel):
                self._channels.remove(item)

    def items(self) -> list[Any]:
        return list(self._by_fd.values())

    def wait(self, timeout: int | None = None) -> list[Any]:
        """The readable (or hung-up) items; raises ``Stopped`` through ``check_stop``. With a
        ``timeout`` (milliseconds; 0: do not block) it may return none."""
        ready = [c for c in self._channels if c.pending()]
        if ready:  # (messages read already: a poll would not find them)
            timeout = 0
        if timeout == 0:
            events = self._poll.wait(0)
        else:
            working = waiting()
            events = self._poll.wait(timeout)
            waited(working)
        for fd, _ in events:
            if fd == self._stop_fd:
                self._check_stop()
            else:
                item = self._by_fd[fd]
                if item not in ready:
                    ready.append(item)
        return ready


def path_of(endpoint: str) -> str:
    return endpoint.removeprefix("ipc://")


class Poller:
    """A ``poll`` set whose :meth:`wait` polls, yielding the CPU in between, for up to
    ``spin`` seconds before it sleeps (see the module's docs). It spins while its last wait
    took no longer than its window.

    A wait that follows at most ``spin`` seconds of work since the process's last wait (on any
    link) spins :data:`CHAIN_SPINS` times as long: its process is a link of a chain whose links
    each work briefly and wait for the others (one game's step: environment, Muscle, Brain and
    back). Where its last :data:`SPINS_JUDGED` spins took more than twice their time on average
    (the CPUs are busy with long work, and spinning takes from it), or those that found their
    event took longer than ``spin`` on average (they waited out the others' long work, where a
    wake-up costs less), it sleeps at once for its next :data:`CONTENDED_WAITS` waits."""

    __slots__ = ("poll", "spin", "short", "skip", "spins", "budget", "wall", "found", "found_wall")

    def __init__(self, items: list[tuple[int, int]], spin: float | None = None) -> None:
        self.poll = select.poll()
        for fd, events in items:
            self.poll.register(fd, events)  # a hang-up or an error is always reported
        self.spin = SPIN_SECONDS if spin is None else spin
        self.short = self.spin > 0
        self.skip = 0  # waits that sleep at once
        self.spins = 0  # since the last judgement, the time they had and the time they took
        self.budget = self.wall = 0.0
        self.found = 0  # of them, those that found their event, and the time these took
        self.found_wall = 0.0

    def add(self, fd: int, events: int) -> None:
        self.poll.register(fd, events)

    def discard(self, fd: int) -> None:
        self.poll.unregister(fd)

    def wait(self, timeout: int | None = None) -> list[tuple[int, int]]:
        """The events, waited for up to ``timeout`` milliseconds (None or negative: until
        there are; 0: not at all)."""
        global _ended
        poll = self.poll.poll
        if timeout == 0:
            return poll(0)
        if timeout is not None and timeout < 0:
            timeout = None
        began = _clock()
        window = self.spin
        if began - _ended <= window:  # it worked briefly: a link of a chain of processes
            window *= CHAIN_SPINS
        if self.skip:
            self.skip -= 1
        elif self.short:
            events = poll(0)
            if events:  # (there already: no spin, none counted)
                _ended = began
                return events
            spin = window if timeout is None else min(window, timeout / 1000)
            events = self._spin(poll, began, spin)
            if events:
                _ended = _clock()
                return events
            if timeout is not None:  # (the time spun rounded up: the wait never runs over)
                timeout = max(0, timeout - math.ceil((_clock() - began) * 1000))
        events = poll(timeout)
        _ended = ended = _clock()
        # short: something came within a spin's time (a wait that timed out is not short)
        self.short = bool(events) and self.spin > 0 and ended - began <= window
        return events

    def _spin(
        self, poll: Callable[[int], list[tuple[int, int]]], began: float, spin: float
    ) -> list[tuple[int, int]]:
        """Poll until ``began`` + ``spin``; the events, if any came."""
        deadline = began + spin
        events: list[tuple[int, int]] = []
        while _clock() < deadline:
            _yield()
            events = poll(0)
            if events:
                break
        took = _clock() - began
        self.budget += spin
        self.wall += took
        if events:
            self.found += 1
            self.found_wall += took
        self.spins += 1
        if self.spins == SPINS_JUDGED:
            # it lost its CPU to long work while it spun, or what it found came after the
            # others' long work
            if self.wall > 2 * self.budget or self.found_wall > self.found * self.spin:
                self.skip = CONTENDED_WAITS
            self.spins, self.budget, self.wall, self.found, self.found_wall = 0, 0.0, 0.0, 0, 0.0
        return events


def _wait(poll: Poller, stop_fd: int, check_stop: Callable[[], object]) -> None:
    """Wait on ``poll``; if the stop pipe is what woke it, let ``check_stop`` decide."""
    working = waiting()
    ready = poll.wait()
    waited(working)
    for fd, _ in ready:
        if fd == stop_fd:
            check_stop()
