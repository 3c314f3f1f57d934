"""The simulation controller's peers: a DEALER socket to each environment and Muscle of its
worker, used request-then-answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core.hotloop import HotLoop
from palaestra.core.watch import Waiting


class Peer:
    """A DEALER socket to one environment or Muscle, used strictly request-then-answer.

    ``waiting`` tells the watchdog when an answer is overdue; it names the peer's process.
    """

    __slots__ = ("name", "socket", "waiting", "receive")

    def __init__(
        self, name: str, socket: zmq.Socket[bytes], waiting: Waiting, hot: HotLoop
    ) -> None:
        self.name = name
        self.socket = socket
        self.waiting = waiting
        self.receive = hot.receiver(socket)  # a stop request interrupts the wait

    def tell(self, message: m.Msg) -> None:
        self.socket.send(m.encode(message))

    def answer(self) -> Any:
        waiting = self.waiting
        waiting.begin()
        payload = self.receive()
        waiting.end()
        return m.decode(payload)

    def ask(self, message: m.Msg) -> Any:
        self.socket.send(m.encode(message))
        return self.answer()


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
        socket: zmq.Socket[bytes],
        waiting: Waiting,
        hot: HotLoop,
        sensors: list[str],
        actuators: list[str],
    ) -> None:
        super().__init__(name, socket, waiting, hot)
        self.process = waiting.name
        self.sensors = sensors
        self.actuators = actuators
        self.environments = {uid.partition(".")[0] for uid in actuators}
