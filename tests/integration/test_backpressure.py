"""Producers facing a store writer that falls behind block, and lose nothing."""

from __future__ import annotations

import asyncio

import pytest
import zmq
import zmq.asyncio

from palaestra.core import messages as m
from palaestra.core.records import RowSink
from palaestra.core.transport import endpoint_for, make_run_dir, remove_run_dir

pytestmark = pytest.mark.timeout(30)

ROW = (0, 1, {f"env.{i}": i for i in range(5)}, {"env.5": 3}, {"r": 1.0}, 1.0, False)


def test_a_stalled_writer_blocks_producers_after_a_bounded_backlog() -> None:
    async def scenario() -> tuple[int, int]:
        run_dir = make_run_dir()
        ctx = zmq.asyncio.Context()
        try:
            pull = ctx.socket(zmq.PULL)
            pull.setsockopt(zmq.RCVHWM, 1000)  # as the StoreWriter sets it
            endpoint = endpoint_for(run_dir, "writer")
            pull.bind(endpoint)
            push = ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.SNDHWM, 1000)  # as palaestra.core.records sets it
            push.connect(endpoint)
            sink = RowSink(
                push, lambda rows: m.MuscleActionRows(agent_id=1, worker=0, rows=rows), batch=10
            )
            sent = 0
            while True:  # the writer reads nothing: the producer must stall, not buffer forever
                for _ in range(10):
                    sink.add(ROW)
                try:
                    await asyncio.wait_for(sink.flush(), 0.5)
                except TimeoutError:
                    break
                sent += 1
                assert sent < 20_000, "the producer never blocked: memory is unbounded"
            received = 0
            while True:  # the writer catches up: everything sent arrives, plus the blocked one
                try:
                    await asyncio.wait_for(pull.recv(), 0.5)
                except TimeoutError:
                    break
                received += 1
            return sent, received
        finally:
            ctx.destroy(linger=0)
            remove_run_dir(run_dir)

    sent, received = asyncio.run(scenario())
    assert 1000 <= sent < 20_000
    assert received >= sent
