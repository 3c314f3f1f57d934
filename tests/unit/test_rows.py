"""Tests of the store rows on their way from the producers to the writer, without processes."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest
import zmq

from palaestra.core.plugin import PluginError
from palaestra.core.supervision.runtime import error_info
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import (
    WORLD_STATE_COLUMNS,
    RowSink,
    UnencodableValue,
    world_state_values,
)


def test_named_rows_cost_what_tuples_cost_on_the_wire() -> None:
    row = m.WorldStateRow(0, 3, {"env.0": 1}, {"env.1": [1, 2]}, {"r": 0.5}, False)
    # no simtime, terminated, truncated or late_by
    as_tuple = (0, 3, {"env.0": 1}, {"env.1": [1, 2]}, {"r": 0.5}, False, None, None, None, None)

    assert msgspec.msgpack.encode(row) == msgspec.msgpack.encode(as_tuple)
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(row), type=m.WorldStateRow)
    assert decoded == row
    assert decoded.setpoints == {"env.1": [1, 2]}


def test_a_muscle_action_row_round_trips_with_its_names() -> None:
    row = m.MuscleActionRow(1, 2, {"e.0": 0}, {"e.1": 3}, {"r": 1.0}, None, True)
    back = msgspec.msgpack.decode(msgspec.msgpack.encode(row), type=m.MuscleActionRow)

    assert (back.episode, back.step, back.objective, back.done) == (1, 2, None, True)


# --- RowSink: batches bounded in rows and bytes, values checked as they come ------------------


# --- RowSink: batches bounded in rows and bytes, values checked as they come ------------------


class Opaque:
    pass


def world_row(step: int, sensors: dict[str, object]) -> m.WorldStateRow:
    return m.WorldStateRow(0, step, sensors, {"env.1": 1}, {"r": 0.0}, False)


def shape(row: m.WorldStateRow) -> tuple[object, ...]:
    """As an environment process shapes its rows for the writer."""
    return world_state_values(1, 0, row)


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    """A PUSH socket as a producer's, and the PULL socket it feeds (in-process)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.bind("inproc://rows")
    push = ctx.socket(zmq.PUSH)
    push.connect("inproc://rows")
    yield push, pull
    ctx.destroy(linger=0)


def steps_pushed(pull: zmq.Socket[bytes]) -> list[list[int]]:
    batches = []
    while pull.poll(0):
        message = m.decode(pull.recv())
        if isinstance(message, m.Rows):
            step = WORLD_STATE_COLUMNS.index("step")
            batches.append([row[step] for row in message.rows])
        else:
            assert isinstance(message, m.ProducerClosed)
    return batches


def test_a_batch_is_pushed_when_it_passes_its_byte_bound(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    sink = RowSink(push, "world_states", shape=shape, batch=1000, batch_bytes=10_000)
    for step in range(1, 8):
        sink.add(world_row(step, {"env.0": "x" * 3000}))

    assert steps_pushed(pull) == [[1, 2, 3, 4]]
    assert len(sink.rows) == 3 and sink.size > 9000
    sink.flush()
    assert steps_pushed(pull) == [[5, 6, 7]]


def test_a_batch_is_pushed_when_it_has_its_rows(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    sink = RowSink(push, "world_states", shape=shape, batch=3)
    for step in range(1, 8):
        sink.add(world_row(step, {"env.0": step}))
    sink.close("env-0")

    assert steps_pushed(pull) == [[1, 2, 3], [4, 5, 6], [7]]


def test_an_unencodable_value_names_the_step_and_uid_and_keeps_the_rows_before(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    sink = RowSink(push, "world_states", shape=shape)
    sink.add(world_row(1, {"env.0": 1}))
    with pytest.raises(UnencodableValue) as caught:
        sink.add(world_row(2, {"env.0": 2, "env.9": Opaque()}))

    message = str(caught.value)
    assert "sensor 'env.9' (Opaque)" in message
    assert "step 2 of episode 0" in message
    assert "Encoding objects of type Opaque is unsupported" in message
    sink.close("env-0", failed=True)
    assert steps_pushed(pull) == [[1]]


def test_an_unencodable_value_is_reported_as_the_plugin_method_that_made_it() -> None:
    class MyEnvironment:
        pass

    sink = RowSink(None, "world_states", plugin=(MyEnvironment(), "update"))
    with pytest.raises(PluginError) as caught:
        sink.add(m.WorldStateRow(3, 7, {}, {"env.1": 2**70}, {}, False))

    info = error_info("Environment-env-0", caught.value)
    assert info.plugin.endswith("MyEnvironment.update")
    assert info.kind == "UnencodableValue"
    assert "set point 'env.1' (int) at step 7 of episode 3" in info.message


def test_rows_are_shaped_for_the_store_and_only_checked_without_one(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    shaped: list[int] = []

    def shape(row: m.WorldStateRow) -> tuple[object, ...]:
        shaped.append(row.step)
        return world_state_values(1, 0, row)

    RowSink(None, "world_states", shape=shape).add(world_row(1, {"env.0": 1}))
    assert shaped == []  # no store: no work for it
    sink = RowSink(push, "world_states", shape=shape)
    sink.add(world_row(2, {"env.0": float("nan")}))
    sink.flush()
    message = m.decode(pull.recv())
    assert isinstance(message, m.Rows) and shaped == [2]
    assert message.rows == [
        (1, 0, 0, 2, '{"env.0":"nan"}', '{"env.1":1}', '{"r":0.0}', False)
        + (None, None, None, None)
    ]
