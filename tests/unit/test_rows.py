"""Tests of the store rows on their way from the producers to the writer, without processes."""

from __future__ import annotations

import msgspec

from palaestra.core import messages as m


def test_named_rows_cost_what_tuples_cost_on_the_wire() -> None:
    row = m.WorldStateRow(0, 3, {"env.0": 1}, {"env.1": [1, 2]}, {"r": 0.5}, False)
    as_tuple = (0, 3, {"env.0": 1}, {"env.1": [1, 2]}, {"r": 0.5}, False)

    assert msgspec.msgpack.encode(row) == msgspec.msgpack.encode(as_tuple)
    batch = m.WorldStateRows(environment_id=1, worker=0, rows=[row])
    decoded = m.decode(m.encode(batch))
    assert isinstance(decoded, m.WorldStateRows)
    assert decoded.rows == [row]
    assert decoded.rows[0].setpoints == {"env.1": [1, 2]}


def test_a_muscle_action_row_round_trips_with_its_names() -> None:
    row = m.MuscleActionRow(1, 2, {"e.0": 0}, {"e.1": 3}, {"r": 1.0}, None, True)
    decoded = m.decode(m.encode(m.MuscleActionRows(agent_id=4, worker=1, rows=[row])))

    assert isinstance(decoded, m.MuscleActionRows)
    (back,) = decoded.rows
    assert (back.episode, back.step, back.objective, back.done) == (1, 2, None, True)
