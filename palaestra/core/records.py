"""Batching result rows on their way to the store writer (PUSH, one way, never awaited).

Producers push from their hot loop (see :mod:`palaestra.core.hotloop`) on a synchronous socket.
A push blocks only when the writer's queue is full: bounded memory, nothing dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import zmq

from palaestra.core import messages as m

LOG = logging.getLogger(__name__)


class RowSink:
    """Collects rows and pushes them in batches of ``batch`` to the store writer.

    ``make`` builds the record message from a list of rows; ``socket`` None discards rows
    (the run has no store).
    """

    def __init__(
        self,
        socket: zmq.Socket[bytes] | None,
        make: Callable[[list[Any]], m.Msg],
        batch: int = 1000,
    ) -> None:
        self.socket = socket
        self.make = make
        self.batch = batch
        self.rows: list[Any] = []

    def add(self, row: Any) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch:
            self.flush()

    def flush(self, block: bool = True) -> bool:
        """Push what is buffered; without ``block``, give up (False, and say so) if the
        writer's queue is full."""
        if not self.rows:
            return True
        rows, self.rows = self.rows, []
        if self.socket is None:
            return True
        try:
            self.socket.send(m.encode(self.make(rows)), 0 if block else zmq.NOBLOCK)
        except zmq.Again:
            LOG.warning("the store writer is not taking rows: %d rows not stored", len(rows))
            return False
        return True

    def close(self, producer: str, block: bool = True) -> None:
        """Push what is buffered, then tell the writer that ``producer`` is done."""
        self.flush(block)
        send(self.socket, m.ProducerClosed(producer=producer), block)


def send(socket: zmq.Socket[bytes] | None, message: m.Msg, block: bool = True) -> None:
    if socket is None:
        return
    try:
        socket.send(m.encode(message), 0 if block else zmq.NOBLOCK)
    except zmq.Again:
        LOG.warning(
            "the store writer is not taking messages: %s not stored", type(message).__name__
        )


def connect_store(hot: Any, endpoint: str | None) -> zmq.Socket[bytes] | None:
    """A PUSH socket to the store writer, made in the hot thread (None without a store)."""
    if not endpoint:
        return None
    sock: zmq.Socket[bytes] = hot.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, 1000)
    sock.connect(endpoint)
    return sock
