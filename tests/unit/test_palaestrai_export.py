"""The values ``palaestra export palaestrai`` shapes: the stand-in spaces of information
objects, sim times, statuses, and palaestrAI's schema on a fresh SQLite database."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from palaestra.core.errors import StoreError
from palaestra.report import palaestrai_schema
from palaestra.report.palaestrai_export import STATUS, export_palaestrai
from palaestra.report.palaestrai_steps import _infos, _simtime, _simtimes, space_of
from tests.unit.test_store_query import RUN, write_store


@pytest.mark.parametrize(
    ("value", "space"),
    [
        (3, "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),
        (0.5, "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),
        (True, "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),
        ([1, 2.5], "Box(low=-inf, high=inf, shape=(2,), dtype=np.float64)"),
        ([[1, 2], [3, 4], [5, 6]], "Box(low=-inf, high=inf, shape=(3, 2), dtype=np.float64)"),
        ([], "Box(low=-inf, high=inf, shape=(0,), dtype=np.float64)"),
        ([[1], [2, 3]], "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),  # ragged
        ("text", "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),
    ],
)
def test_a_value_gets_an_unbounded_box_of_its_shape(value: object, space: str) -> None:
    assert space_of(value) == space


def test_information_objects_take_jsonpickles_form() -> None:
    kind = "palaestrai.agent.sensor_information.SensorInformation"
    sensors = json.loads(_infos(kind, '{"a": [1, 2], "b": "nan", "c": [1.5, "-inf"]}'))
    rewards = json.loads(_infos("R", '{"r": 1.0}', value_ids=False))

    assert sensors[0] == {
        "py/object": kind,
        "py/state": {
            "uid": "a",
            "value": [1, 2],
            "space": "Box(low=-inf, high=inf, shape=(2,), dtype=np.float64)",
            "value_ids": None,
        },
    }
    # non-finite numbers stay the strings palaestra's store holds, and count as numbers
    assert [(s["py/state"]["value"], s["py/state"]["space"]) for s in sensors[1:]] == [
        ("nan", "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"),
        ([1.5, "-inf"], "Box(low=-inf, high=inf, shape=(2,), dtype=np.float64)"),
    ]
    assert set(rewards[0]["py/state"]) == {"uid", "value", "space"}
    assert _infos("S", None) == "[]"


def test_rewards_whose_uid_repeats_are_each_an_information_object() -> None:
    """(a row keeps them as a list; palaestrAI keeps a list of its objects, both named alike)"""
    kept = '[{"uid": "reward", "value": 1.0}, {"uid": "reward", "value": "nan"}]'
    rewards = json.loads(_infos("R", kept, value_ids=False))

    assert [(r["py/object"], r["py/state"]["uid"], r["py/state"]["value"]) for r in rewards] == [
        ("R", "reward", 1.0),
        ("R", "reward", "nan"),
    ]


def test_sim_times_as_palaestrai_keeps_them() -> None:
    assert _simtime({"simtime_ticks": 7, "simtime_timestamp": "2024-01-01T12:00:00"}) == (
        7,
        dt.datetime(2024, 1, 1, 12),
    )
    aware = {"simtime_ticks": None, "simtime_timestamp": "2024-01-01T12:00:00+02:00"}
    assert _simtime(aware) == (None, dt.datetime(2024, 1, 1, 10))  # UTC, naive
    assert _simtime({"simtime_ticks": True, "simtime_timestamp": "no date"}) == (None, None)
    assert _simtime(None) == (None, None)
    assert _simtimes(["a", "b"], [{"simtime_ticks": 3}, None]) == {
        "a": {"simtime_ticks": 3, "simtime_timestamp": None},
        "b": {"simtime_ticks": None, "simtime_timestamp": None},
    }


def test_every_palaestra_status_is_one_palaestrai_knows() -> None:
    assert set(STATUS.values()) <= set(palaestrai_schema.STATUSES)
    assert STATUS["cancelled"] == "error"


def test_the_schema_is_made_once_and_a_foreign_one_refused() -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as connection:
        made = palaestrai_schema.prepare(connection, "sqlite://")
        again = palaestrai_schema.prepare(connection, "sqlite://")
        columns = {c["name"] for c in inspect(connection).get_columns("muscle_actions")}
        connection.exec_driver_sql("drop table world_states")
        connection.exec_driver_sql("create table world_states (id integer primary key)")
        with pytest.raises(StoreError, match="world_states lacks walltime, simtime_ticks"):
            palaestrai_schema.prepare(connection, "sqlite://")
    assert set(made) == set(palaestrai_schema.METADATA.tables) and again == []
    assert {"simtimes", "applied_actuator_setpoints", "decision_index"} <= columns


def test_a_target_whose_directory_cannot_be_made_is_named(tmp_path: Path) -> None:
    """``--to sqlite:///<a file>/palaestrai.db``: the directory the target's file goes in
    cannot be made; the export failed with a bare ``FileExistsError`` traceback (exit 1)."""
    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    blocking = tmp_path / "a-file"
    blocking.write_text("")
    target = f"sqlite:///{blocking}/palaestrai.db"

    with pytest.raises(StoreError) as raised:
        export_palaestrai([RUN], target, store_uri=store)

    assert str(raised.value).startswith(f"target {target}: cannot make its directory {blocking}: ")
    assert raised.value.exit_code == 3
    assert blocking.read_text() == ""
