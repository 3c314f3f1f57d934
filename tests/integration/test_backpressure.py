"""Producers facing a store writer that falls behind are held back, and lose nothing."""

from __future__ import annotations

import pytest
import zmq

from palaestra.core.wire import messages as m
from palaestra.core.wire.records import QUEUE_MESSAGES, RowSink, muscle_action_values
from palaestra.core.wire.transport import endpoint_for, make_run_dir, remove_run_dir
from palaestra.store.writer import RECEIVE_HWM

pytestmark = pytest.mark.timeout(30)

ROW = m.MuscleActionRow(
    0, 1, {f"env.{i}": i for i in range(5)}, {"env.5": 3}, {"r": 1.0}, 1.0, False
)


def test_a_stalled_writer_holds_producers_back_after_a_bounded_backlog() -> None:
    run_dir = make_run_dir()
    ctx = zmq.Context()
    try:
        pull = ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.RCVHWM, RECEIVE_HWM)  # as the StoreWriter sets it
        endpoint = endpoint_for(run_dir, "writer")
        pull.bind(endpoint)
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.SNDHWM, QUEUE_MESSAGES)  # as palaestra.core.wire.records sets it
        push.connect(endpoint)
        sink = RowSink(
            push,
            "muscle_actions",
            shape=lambda row: muscle_action_values(1, 0, row),
        )
        queued = 0
        while True:  # the writer reads nothing: the queue must fill up, not grow forever
            for _ in range(10):
                sink.add(ROW)
            if not sink.flush(block=False):  # a blocking flush would wait here
                break
            queued += 1
            assert queued < 20_000, "the producer was never held back: memory is unbounded"
        pull.setsockopt(zmq.RCVTIMEO, 1000)
        received = 0
        while True:  # the writer catches up: every queued batch arrives
            try:
                pull.recv()
            except zmq.Again:
                break
            received += 1
    finally:
        ctx.destroy(linger=0)
        remove_run_dir(run_dir)
    assert QUEUE_MESSAGES <= queued <= 4 * (QUEUE_MESSAGES + RECEIVE_HWM)
    assert received == queued
