"""The simulation controller's peers: a DEALER socket to each environment and Muscle of its
worker, used request-then-answer, and a per-round link to each while it plays the games."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zmq

from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.supervision.watch import Waiting
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, PeerGone
from palaestra.core.wire.transport import link_for


class Peer:
    """A DEALER socket to one environment or Muscle, used strictly request-then-answer, and
    the per-round link to it (:mod:`palaestra.core.wire.channel`) while this controller plays the
    worker's games.

    ``waiting`` tells the watchdog when an answer is overdue; it names the peer's process.
    """

    __slots__ = ("name", "socket", "waiting", "receive", "endpoint", "hot", "link")

    def __init__(self, name: str, endpoint: str, waiting: Waiting, hot: HotLoop) -> None:
        self.name = name
        self.endpoint = endpoint
        self.hot = hot
        self.socket = hot.socket(zmq.DEALER)
        hot.dial(self.socket, endpoint)
        self.waiting = waiting
        self.receive = hot.receiver(self.socket)  # a stop request interrupts the wait
        self.link: Channel | None = None

    def tell(self, message: m.Msg) -> None:
        self.socket.send(m.encode(message))

    def answer(self) -> Any:
        waiting = self.waiting
        waiting.begin()
        payload = self.receive()
        waiting.end()
        return m.decode(payload)

    def ask(self, message: m.Msg) -> Any:
        self.tell(message)
        return self.answer()

    def linked(self) -> Channel:
        """The per-round link to the peer (made at first use)."""
        if self.link is None:
            self.link = self.hot.connect(link_for(self.endpoint), self.waiting.name)
        return self.link

    def send(self, data: bytes) -> None:
        """Send ``data`` on the link (a peer that hung up: its parent reports why)."""
        try:
            self.linked().send(data)
        except PeerGone:
            self.hot.idle()

    def recv(self) -> bytes:
        """The next message on the link, waited for as an answer."""
        waiting = self.waiting
        waiting.begin()
        try:
            data = self.linked().recv()
        except PeerGone:
            self.hot.idle()  # its parent reports why
        waiting.end()
        return data


def ask_all(peers: Sequence[Peer], messages: Sequence[m.Msg]) -> list[Any]:
    """Send each peer its message, then collect the answers: the peers work in parallel."""
    if len(peers) == 1:
        return [peers[0].ask(messages[0])]
    for peer, message in zip(peers, messages, strict=True):
        peer.tell(message)
    return [peer.answer() for peer in peers]


class AgentPeer(Peer):
    """An agent's Muscle in this worker: what it reads, which environments it acts on."""

    __slots__ = ("process", "sensors", "actuators", "environments")

    def __init__(
        self,
        name: str,
        endpoint: str,
        waiting: Waiting,
        hot: HotLoop,
        sensors: list[str],
        actuators: list[str],
    ) -> None:
        super().__init__(name, endpoint, waiting, hot)
        self.process = waiting.name
        self.sensors = sensors
        self.actuators = actuators
        self.environments = {uid.partition(".")[0] for uid in actuators}
