"""The wire of an external environment: one ZMQ DEALER socket to the client, its connection
events, and one command at a time with its checked answer (protocol version 1, see
``docs/external-environments.md``); and the offline world, a client started as a child.

:class:`~palaestra.environment.external.ExternalEnvironment` decides what to send and what the
answers mean; this module only carries them and says when the client hung up.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import zmq
from zmq.utils.monitor import recv_monitor_message

from palaestra.core.errors import PalaestraError
from palaestra.core.files import socket_parent
from palaestra.core.supervision import undertaker

LOG = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
"""The protocol version palaestra speaks (``hello``'s ``version``)."""
ENCODINGS = ("json", "msgpack")
OFFLINE_WORLD = Path(__file__).resolve().parent.parent / "clients" / "python" / "heater_world.py"
"""The reference client's simulated world, which ``offline: true`` starts."""
SHARED_ADDRESS = (
    "another worker or game of this environment binding it too? put {worker} in the address, "
    "one address each: bind: tcp://*:560{worker} or ipc:///tmp/room-{worker}"
)
"""What a bind that found its address taken may be, and what to do."""
_EVENTS = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED
_STOP_SECONDS = 2.0
_SEND_SECONDS = 1.0


class ExternalEnvironmentError(PalaestraError):
    """The external environment failed: it never came, hung up, answered an error or
    something that is not the protocol. The message names the environment, its address and
    what happened (exit code 1: the run failed)."""


@dataclass(eq=False)
class Link:
    """palaestra's end of the conversation with one client.

    Args:
        address: Where to bind or connect (``tcp://...``, ``ipc://...``).
        binding: Bind ``address`` (the client connects), else connect to it.
        encoding: ``json`` or ``msgpack``.
        heartbeat: Seconds between ZMTP heartbeats (0: none); three unanswered ones count as a
            hang-up.
        routing_id: The start of the socket's routing id, which the client's ROUTER sees;
            ``/<n>`` follows, counting the sockets (see :meth:`renew`).
        describe: The start of every error message (who, where).
        postscript: The end of every error message (what the offline world said, or "").
    """

    address: str
    _: KW_ONLY
    binding: bool
    encoding: str
    heartbeat: float
    routing_id: bytes
    describe: Callable[[], str]
    postscript: Callable[[], str]
    generation: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._open()

    def _open(self) -> None:
        """A new context and socket, bound or connected, with a monitor of its connections."""
        self.peers = 0
        self.dropped = False  # a connection ended since this was last cleared
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sock: zmq.Socket[bytes] = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # no queueing for a client that is not there
        sock.setsockopt(zmq.SNDTIMEO, int(_SEND_SECONDS * 1000))
        sock.setsockopt(zmq.ROUTING_ID, self.routing_id + f"/{self.generation}".encode())
        if self.heartbeat > 0:
            sock.setsockopt(zmq.HEARTBEAT_IVL, int(self.heartbeat * 1000))
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(self.heartbeat * 3000))
        self.socket = sock
        self.monitor: zmq.Socket[bytes] = sock.get_monitor_socket(_EVENTS)
        self.poller = zmq.Poller()  # an answer, or a connection's end
        self.poller.register(sock, zmq.POLLIN)
        self.poller.register(self.monitor, zmq.POLLIN)
        self.found = _ipc_file(self.address) if self.binding else None  # (a file bound before)
        try:
            if self.binding:
                sock.bind(self.address)
            else:
                sock.connect(self.address)
        except zmq.ZMQError as exc:
            self.close()
            verb = "bind" if self.binding else "connect to"
            shared = f" ({SHARED_ADDRESS})" if exc.errno == zmq.EADDRINUSE else ""
            raise self.error(f"cannot {verb} {self.address}: {exc}{shared}") from None
        self.bound = _ipc_file(self.address) if self.binding else None

    def shared(self) -> str | None:
        """Why clients may not reach this link's bound ipc address, or None: another socket
        bound it after this one (``"after"``; ZMQ replaces the file of a bound ipc address,
        and clients connect to the socket that bound it last), or its file was there before
        (``"before"``: a socket bound it first, or a run that was killed left it)."""
        if self.bound is not None and _ipc_file(self.address) != self.bound:
            return "after"
        return "before" if self.found is not None else None

    def renew(self) -> None:
        """Replace the socket after a hang-up (a new routing id, no connection of the old
        one left): ZMQ may still hold the ended connection's pipe for a moment, and a
        command sent into it would be lost. A client that connects to palaestra reconnects
        by itself; to one that binds, the new socket connects."""
        self.close()  # (terminating the context waits until the old socket is gone)
        self.generation += 1
        self._open()

    def error(self, what: str) -> ExternalEnvironmentError:
        """The error ``what``, with who and where in front and what the world said after."""
        return ExternalEnvironmentError(f"{self.describe()}: {what}{self.postscript()}")

    def garbage(self, command: str, what: str) -> ExternalEnvironmentError:
        """The error for an answer to ``command`` that is not the protocol."""
        return self.error(not_the_protocol(command, what))

    def await_peer(self, deadline: float) -> bool:
        """Wait until a client is connected (ZMQ handshake done); False at the deadline."""
        while self.peers <= 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._events(left):
                return self.peers > 0
        return True

    def _events(self, seconds: float) -> bool:
        """Take the connection events of the next ``seconds``; False if none came."""
        if not self.monitor.poll(max(0, int(seconds * 1000))):
            return False
        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.peers += 1
            elif event == zmq.EVENT_DISCONNECTED:
                self.peers = max(0, self.peers - 1)
                self.dropped = True
        return True

    def request(
        self, command_id: int, command: str, fields: dict[str, Any], seconds: float, what: str
    ) -> dict[str, Any] | None:
        """Send one command and return its answer (status ok); None if a connection ended
        (:attr:`dropped`) before the client answered, also one that ended before it was sent:
        the command may be lost, and a client that comes back must be greeted again.

        Args:
            command_id: The command's id.
            command: Its name.
            fields: Its other keys.
            seconds: How long the client may take to answer.
            what: The command in messages (``step 4 of episode 0 (command 6)``).

        Raises:
            ExternalEnvironmentError: No answer in time, an error answer, or garbage.
        """
        payload = self.encode({"id": command_id, "command": command, **fields})
        self._events(0)
        if self.dropped:
            return None
        try:
            self.socket.send(payload)
        except zmq.Again:  # no client to send to
            self._events(0)
            self.dropped = True
            return None
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            ready = dict(self.poller.poll(max(0, int(left * 1000)))) if left > 0 else {}
            if not ready:
                raise self.error(
                    f"the client did not answer {what} within {seconds:g} s (timeout)"
                )
            if self.monitor in ready:
                self._events(0)
                if self.dropped:  # (a new connection may be there already: greet it first)
                    return None
            if self.socket in ready:
                answer = self.answer(self.socket.recv_multipart(), command, command_id, what)
                if answer is not None:
                    return answer

    def answer(
        self, frames: list[bytes], command: str, command_id: int, what: str
    ) -> dict[str, Any] | None:
        """The checked answer to ``command_id``; None for a late answer to an earlier one."""
        if len(frames) != 1:
            raise self.garbage(command, f"{len(frames)} frames, expected 1")
        raw = frames[0]
        try:
            if self.encoding == "msgpack" and raw[:1] != b"{":
                answer = msgspec.msgpack.decode(raw)
            else:
                answer = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise self.garbage(command, f"{raw[:80]!r} is not {self.encoding} ({exc})") from None
        if not isinstance(answer, dict):
            raise self.garbage(command, f"{raw[:80]!r} is not an object")
        answer_id, status = answer.get("id"), answer.get("status")
        if answer_id is True or answer_id is False:  # (no id, though Python's 1 and 0)
            raise self.garbage(command, f"'id' is {answer_id!r}, expected {command_id}")
        if isinstance(answer_id, int) and answer_id < command_id:
            LOG.debug("%s: ignored a late answer to command %d", self.describe(), answer_id)
            return None
        if answer_id is not None and answer_id != command_id:
            raise self.garbage(command, f"'id' is {answer_id!r}, expected {command_id}")
        if status == "error":
            raise self.error(f"the client answered {what} with an error: {answer.get('error')}")
        if status != "ok" or answer_id is None:
            raise self.garbage(command, f"{raw[:200]!r} has no 'id' and 'status' ok or error")
        return answer

    def encode(self, message: Mapping[str, Any]) -> bytes:
        if self.encoding == "msgpack":
            return msgspec.msgpack.encode(message)
        return msgspec.json.encode(message)

    def close(self) -> None:
        self.monitor.close(linger=0)
        self.socket.close(linger=0)
        self.ctx.term()


def _ipc_file(address: str) -> tuple[int, int] | None:
    """The device and inode of the file of an ``ipc://`` address (None: no such file, or
    another kind of address)."""
    if not address.startswith("ipc://"):
        return None
    try:
        found = os.stat(address[len("ipc://") :])
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def not_the_protocol(command: str, what: str) -> str:
    """What is wrong with an answer to ``command`` that is not the protocol."""
    return (
        f"the answer to {command} is not palaestra's protocol (version {PROTOCOL_VERSION}, "
        f"docs/external-environments.md): {what}"
    )


class OfflineWorld:
    """The reference client's simulated world as a child process, on a private ipc address
    (which palaestra binds; the world connects to it).

    Start it on the process's main thread: it gets SIGKILL when the thread that started it
    ends (``PR_SET_PDEATHSIG``), so it never outlives its environment, even one killed.

    Raises:
        ExternalEnvironmentError: The world cannot be started.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        prefix, socket = "palaestra-external-", "/world.sock"
        self.private_dir: str | None = tempfile.mkdtemp(
            prefix=prefix, dir=socket_parent(prefix, len(socket))
        )
        undertaker.leave(self.private_dir)  # (removed by stop(); if the run is killed, by it)
        self.address = f"ipc://{self.private_dir}{socket}"
        command = [sys.executable, str(OFFLINE_WORLD), "--connect", self.address]
        try:
            self.child: subprocess.Popen[bytes] | None = subprocess.Popen(
                [*command, "--exit-on-close"],
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent(),
                close_fds=True,
            )
        except OSError as exc:
            self.child = None
            self.stop()
            raise ExternalEnvironmentError(
                f"{where}: cannot start the offline world {OFFLINE_WORLD}: {exc}"
            ) from None
        LOG.info("%s: started the offline world, pid %d", where, self.child.pid)

    def said(self) -> str:
        """How the world ended, if it did (for error messages), else ""."""
        child = self.child
        code = None if child is None else child.poll()
        if child is None or code is None:
            return ""
        return f"; the offline world (pid {child.pid}) exited with code {code}"

    def stop(self) -> None:
        """Wait a moment for the world to end (it does after ``close``), then SIGTERM, then
        SIGKILL; remove the private directory."""
        child, self.child = self.child, None
        if child is not None:
            try:
                child.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                child.terminate()
                try:
                    child.wait(_STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    LOG.warning("%s: the offline world ignored SIGTERM; killed it", self.where)
                    child.kill()
                    child.wait()
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when its parent (thread) ends."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the run's reaper still takes it down
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent is gone already
            os._exit(1)

    return set_death_signal
