"""Links between hosts: ZMQ over TCP with CURVE keys made for the run, Unix links within a host.

Without a :class:`Network` nothing here changes a run: every endpoint is a private ``ipc://``
path (:mod:`palaestra.core.wire.transport`). With one (processes placed on several hosts: see
:mod:`palaestra.core.supervision.launch`), each process knows its host's name, the address it
may bind on, and the run's keys:

- A server socket binds its ipc endpoint and, as a CURVE server, a ``tcp://<address>:*``
  endpoint, and announces both with its host's name
  (:func:`~palaestra.core.wire.transport.announce`). A ZAP handler in each process admits only
  clients that hold the run's client key.
- A client picks the ipc alternative on its own host, else the tcp one (:meth:`Links.connect`).
- The per-step links (:mod:`palaestra.core.wire.channel`) keep their code path: beside a
  :class:`~palaestra.core.wire.channel.Listener` a :class:`Gateway` thread accepts CURVE peers on
  a ROUTER and opens one local connection to the listener per peer; on the connecting side a
  :class:`Relay` thread joins one end of a socket pair (the other end is the
  :class:`~palaestra.core.wire.channel.Channel`) to a CURVE DEALER. Both relay the packets as
  they are; an empty packet is a hang-up.

Pickled user payloads (Muscle <-> Brain) thus cross hosts only on CURVE-authenticated,
encrypted TCP.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Any

import msgspec
import zmq
import zmq.utils.z85

from palaestra.core.errors import InvalidInputError
from palaestra.core.wire.channel import CHUNK, Channel, Listener, connect
from palaestra.core.wire.transport import announce, parse

ZAP_DOMAIN = b"palaestra"
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
RELAY_LINGER_MS = 500
"""How long a relay's socket may take to deliver its hang-up when its channel closed."""


class RunKeys(msgspec.Struct, frozen=True, kw_only=True):
    """The run's CURVE keys (Z85): every server holds the server pair, every client the
    client pair; a server admits only the client public key."""

    server_public: str
    server_secret: str
    client_public: str
    client_secret: str

    @classmethod
    def generate(cls) -> RunKeys:
        server_public, server_secret = zmq.curve_keypair()
        client_public, client_secret = zmq.curve_keypair()
        return cls(
            server_public=server_public.decode(),
            server_secret=server_secret.decode(),
            client_public=client_public.decode(),
            client_secret=client_secret.decode(),
        )


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """A host as the run's links see it: its name (processes with the same name share Unix
    links) and the address its processes bind TCP on, reachable from the other hosts."""

    name: str
    address: str


class Network(msgspec.Struct, frozen=True, kw_only=True):
    """What one process of a run that crosses hosts knows of the network: its host and the
    run's keys."""

    host: str
    address: str
    keys: RunKeys

    @classmethod
    def for_run(cls, host: Host) -> Network:
        """A new run's network, seen from ``host``, with fresh keys."""
        return cls(host=host.name, address=host.address, keys=RunKeys.generate())

    def on(self, host: Host) -> Network:
        """The same run's network seen from another host."""
        return msgspec.structs.replace(self, host=host.name, address=host.address)


def pick(endpoint: str, network: Network | None) -> tuple[str, bool]:
    """The address to connect to for ``endpoint`` and whether it is a TCP (CURVE) one: the
    ipc alternative on the same host (or without a network), else the tcp one."""
    net = parse(endpoint)
    if net is None:
        return endpoint, False
    if network is None or net.host == network.host or not net.tcp:
        return net.ipc, False
    return net.tcp, True


def client_options(sock: zmq.Socket[Any], keys: RunKeys) -> None:
    sock.setsockopt(zmq.CURVE_SERVERKEY, keys.server_public.encode())
    sock.setsockopt(zmq.CURVE_PUBLICKEY, keys.client_public.encode())
    sock.setsockopt(zmq.CURVE_SECRETKEY, keys.client_secret.encode())


def server_options(sock: zmq.Socket[Any], keys: RunKeys) -> None:
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.CURVE_SECRETKEY, keys.server_secret.encode())
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)


def _bind_tcp(sock: zmq.Socket[Any], network: Network) -> str:
    """Bind ``sock`` on a free port of the host's address; returns the endpoint. An address
    this host does not have is bad input, named with the host (exit 2)."""
    address = network.address
    wildcard = f"tcp://[{address}]:*" if ":" in address else f"tcp://{address}:*"
    try:
        sock.bind(wildcard)
    except zmq.ZMQError as exc:
        raise InvalidInputError(
            f"cannot bind {wildcard} on host {network.host!r}: {exc.strerror}; the address given "
            "for a host must be one of its own, reachable from the run's other hosts"
        ) from exc
    return str(sock.getsockopt_string(zmq.LAST_ENDPOINT))


class Links:
    """One process's side of the run's links (see the module's docstring).

    Args:
        network: The process's network (None: a run on one host; every method then does what
            the local path does).
        ctx: The process's ZMQ context (the runtime's, shadowed): the ZAP handler must live in
            the context of the sockets it guards.
    """

    def __init__(self, network: Network | None, ctx: zmq.Context[Any]) -> None:
        self.network = network
        self.ctx = ctx
        self._zap: ZapHandler | None = None
        self._threads: list[_Worker] = []
        self._lock = threading.Lock()

    def bind(self, sock: zmq.Socket[Any], ipc: str) -> str:
        """Bind ``sock`` on ``ipc`` (and, with a network, on a CURVE tcp endpoint); returns
        the endpoint to announce."""
        sock.bind(ipc)
        network = self.network
        if network is None:
            return ipc
        self._ensure_zap(network)
        server_options(sock, network.keys)
        return announce(ipc, network.host, _bind_tcp(sock, network))

    def connect(self, sock: zmq.Socket[Any], endpoint: str) -> None:
        """Connect ``sock`` to ``endpoint``: by ipc on the same host, else by CURVE tcp."""
        address, tcp = pick(endpoint, self.network)
        if tcp:
            assert self.network is not None
            client_options(sock, self.network.keys)
        sock.connect(address)

    def listen(self, listener: Listener) -> str:
        """A gateway for ``listener``'s peers on other hosts; returns its tcp endpoint ("" if
        the run does not cross hosts)."""
        network = self.network
        if network is None:
            return ""
        self._ensure_zap(network)
        gateway = Gateway(self.ctx, network, listener.path)
        self._start(gateway)
        return str(gateway.endpoint)

    def channel(
        self, endpoint: str, name: str, stop_fd: int, check_stop: Any, peer: str
    ) -> Channel:
        """A :class:`Channel` to the listener at ``endpoint``, through a relay if it is on
        another host."""
        address, tcp = pick(endpoint, self.network)
        if not tcp:
            return connect(address, name, stop_fd, check_stop, peer)
        assert self.network is not None
        near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            relay = Relay(self.ctx, address, self.network.keys, far)
        except BaseException:
            near.close()
            far.close()
            raise
        self._start(relay)
        channel = Channel(near, peer, stop_fd, check_stop)
        channel.send(name.encode())
        return channel

    def counters(self) -> dict[str, int]:
        """Packets relayed to and from other hosts, summed over this process's gateways and
        relays (for tests and benchmarks)."""
        with self._lock:
            threads = list(self._threads)
        return {
            "sent": sum(t.sent for t in threads),
            "received": sum(t.received for t in threads),
        }

    def close(self) -> None:
        """Stop every gateway, relay and the ZAP handler (before the context ends)."""
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout=2.0)
        if self._zap is not None:
            self._zap.stop()
            self._zap.join(timeout=2.0)
            self._zap = None

    def _ensure_zap(self, network: Network) -> None:
        with self._lock:
            if self._zap is None:
                self._zap = ZapHandler(self.ctx, network.keys)
                self._zap.start()

    def _start(self, thread: _Worker) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()


class _Worker(threading.Thread):
    """A daemon thread with a stop pipe; its sockets are made before it starts (a ZMQ socket
    may move to another thread across the barrier of its start) and closed by it."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._stop_r, self._stop_w = os.pipe()
        self.sent = 0
        self.received = 0

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # ended and closed already
            os.write(self._stop_w, b"s")

    def run(self) -> None:
        try:
            self.serve()
        finally:
            os.close(self._stop_r)
            os.close(self._stop_w)

    def serve(self) -> None:
        raise NotImplementedError


class ZapHandler(_Worker):
    """Answers the ZAP requests of its context: a CURVE client is admitted only with the run's
    client key; NULL (the process's own ipc endpoints, which are never CURVE servers) is."""

    def __init__(self, ctx: zmq.Context[Any], keys: RunKeys) -> None:
        super().__init__("palaestra-zap")
        self.admitted = zmq.utils.z85.decode(keys.client_public.encode())
        self.sock = ctx.socket(zmq.REP)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(ZAP_ENDPOINT)
        self.refused = 0

    def serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self._stop_r, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._stop_r in ready:
                    return
                frames = self.sock.recv_multipart()
                version, request_id, mechanism = frames[0], frames[1], frames[5]
                credentials = frames[6:]
                admit = mechanism == b"NULL" or (
                    mechanism == b"CURVE" and credentials[:1] == [self.admitted]
                )
                if not admit:
                    self.refused += 1
                status = (b"200", b"OK") if admit else (b"400", b"not a key of this run")
                self.sock.send_multipart([version, request_id, *status, b"", b""])
        except zmq.ContextTerminated:
            pass
        finally:
            self.sock.close(linger=0)


class Gateway(_Worker):
    """Accepts CURVE peers of a :class:`~palaestra.core.wire.channel.Listener` on other hosts: one
    local connection to the listener per peer, packets relayed both ways unchanged."""

    def __init__(self, ctx: zmq.Context[Any], network: Network, path: str) -> None:
        super().__init__(f"palaestra-gateway-{os.path.basename(path)}")
        self.path = path
        router = ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.setsockopt(zmq.SNDHWM, 0)  # the channels' protocols bound what is in flight
        router.setsockopt(zmq.RCVHWM, 0)
        server_options(router, network.keys)
        try:
            self.endpoint = _bind_tcp(router, network)
        except BaseException:
            router.close(linger=0)  # an open socket would keep the context from ending
            os.close(self._stop_r)
            os.close(self._stop_w)
            raise
        self.router = router

    def serve(self) -> None:
        router = self.router
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(self._stop_r, zmq.POLLIN)
        peers: dict[bytes, socket.socket] = {}
        by_fd: dict[int, tuple[bytes, socket.socket]] = {}

        def drop(peer: bytes) -> None:
            sock = peers.pop(peer, None)
            if sock is not None:
                by_fd.pop(sock.fileno(), None)
                poller.unregister(sock.fileno())
                sock.close()

        try:
            while True:
                for item, _ in poller.poll():
                    if item == self._stop_r:
                        return
                    if item is router:
                        peer, packet = router.recv_multipart()
                        self.received += 1
                        sock = peers.get(peer)
                        if not packet:  # the remote end hung up
                            drop(peer)
                            continue
                        if sock is None:
                            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                            sock.connect(self.path)
                            peers[peer] = sock
                            by_fd[sock.fileno()] = (peer, sock)
                            poller.register(sock.fileno(), zmq.POLLIN)
                        try:
                            sock.send(packet)
                        except OSError:  # the listener's process closed it
                            router.send_multipart([peer, b""])
                            drop(peer)
                    else:
                        peer, sock = by_fd[item]
                        try:
                            packet = sock.recv(CHUNK + 1)
                        except OSError:
                            packet = b""
                        router.send_multipart([peer, packet])
                        self.sent += 1
                        if not packet:
                            drop(peer)
        except zmq.ContextTerminated:
            pass
        finally:
            for sock in peers.values():
                sock.close()
            router.close(linger=0)


class Relay(_Worker):
    """Joins a local socket (one end of a socket pair; the :class:`Channel` holds the other)
    to a CURVE DEALER connected to a :class:`Gateway` on another host."""

    def __init__(
        self, ctx: zmq.Context[Any], address: str, keys: RunKeys, local: socket.socket
    ) -> None:
        super().__init__(f"palaestra-relay-{address}")
        self.local = local
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, RELAY_LINGER_MS)
        dealer.setsockopt(zmq.SNDHWM, 0)
        dealer.setsockopt(zmq.RCVHWM, 0)
        client_options(dealer, keys)
        dealer.connect(address)
        self.dealer = dealer

    def serve(self) -> None:
        dealer, local = self.dealer, self.local
        fd = local.fileno()
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(fd, zmq.POLLIN)
        poller.register(self._stop_r, zmq.POLLIN)
        try:
            while True:
                for item, _ in poller.poll():
                    if item == self._stop_r:
                        return
                    if item is dealer:
                        packet = dealer.recv()
                        self.received += 1
                        if not packet:  # the listener's side hung up
                            return
                        local.send(packet)
                    else:
                        try:
                            packet = local.recv(CHUNK + 1)
                        except OSError:
                            packet = b""
                        dealer.send(packet)
                        self.sent += 1
                        if not packet:  # the channel closed
                            return
        except zmq.ContextTerminated:
            pass
        except OSError:  # the channel closed while a packet was on its way to it
            pass
        finally:
            local.close()
            dealer.close()


__all__ = [
    "Gateway",
    "Host",
    "Links",
    "Network",
    "Relay",
    "RunKeys",
    "ZapHandler",
    "client_options",
    "pick",
    "server_options",
]
