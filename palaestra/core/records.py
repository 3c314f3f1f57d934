"""Batching result rows on their way to the store writer (PUSH, one way, never awaited)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import zmq
import zmq.asyncio

from palaestra.core import messages as m


class RowSink:
    """Collects rows and pushes them in batches of ``batch`` to the store writer.

    ``make`` builds the record message from a list of rows. Pushing blocks (asynchronously)
    only when the writer's queue is full: bounded memory, nothing dropped.
    """

    def __init__(
        self,
        socket: zmq.asyncio.Socket | None,
        make: Callable[[list[Any]], m.Msg],
        batch: int = 1000,
    ) -> None:
        self.socket = socket
        self.make = make
        self.batch = batch
        self.rows: list[Any] = []

    def add(self, row: Any) -> bool:
        """Buffer ``row``; True when a batch is due (call :meth:`flush`)."""
        self.rows.append(row)
        return len(self.rows) >= self.batch

    async def flush(self) -> None:
        if self.rows:
            rows, self.rows = self.rows, []
            if self.socket is not None:
                await self.socket.send(m.encode(self.make(rows)))

    async def close(self, producer: str) -> None:
        """Push what is buffered, then tell the writer that ``producer`` is done."""
        await self.flush()
        await close_producer(self.socket, producer)


async def close_producer(socket: zmq.asyncio.Socket | None, producer: str) -> None:
    """Tell the writer that ``producer`` has sent everything."""
    if socket is not None:
        await socket.send(m.encode(m.ProducerClosed(producer=producer)))


def connect_store(runtime: Any, endpoint: str | None) -> zmq.asyncio.Socket | None:
    if not endpoint:
        return None
    sock: zmq.asyncio.Socket = runtime.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, 1000)
    sock.connect(endpoint)
    return sock
