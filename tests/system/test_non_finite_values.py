"""Infinities and NaN from a real run (issue 9, defect 15): stored as strict JSON, exported as
strict JSON, CSV and Parquet, and read back as floats by ``palaestra.store.query``.

The convention: in JSON (the store's JSON columns, ``results`` exports) a non-finite number is
one of the strings ``"inf"``, ``"-inf"`` and ``"nan"``; number columns hold SQL floats (SQLite
has no NaN: a NaN there is NULL); pandas frames hold floats.
"""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from palaestra.store import query
from tests.conftest import Workspace, wait_until_gone

pytestmark = pytest.mark.timeout(120)

RUN = "nonfinite-run"
STEPS = 8
CYCLE = (math.inf, -math.inf, math.nan, 1.5)  # tests/plugins/nonfinite.py
JSON_COLUMNS = ("sensor_readings", "actuator_setpoints", "rewards", "sensors", "setpoints")
RUN_FILE = f"""\
uid: {RUN}
experiment_uid: nonfinite
seed: 1
version: "0.1"
schedule:
  - only:
      environments:
        - environment:
            name: nonfinite:NonFiniteEnvironment
            uid: env
            params: {{max_iter: {STEPS}}}
      agents:
        - name: agent
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: nonfinite:NonFiniteMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [env.0, env.1]
          actuators: [env.0]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def strict_loads(text: str) -> Any:
    """``json.loads`` that refuses ``Infinity``, ``-Infinity`` and ``NaN``."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def from_strict_json(value: Any) -> Any:
    """The strings "inf", "-inf" and "nan" (also in lists and dicts) as floats."""
    if isinstance(value, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(value, value)
    if isinstance(value, list):
        return [from_strict_json(v) for v in value]
    if isinstance(value, dict):
        return {k: from_strict_json(v) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (also inside lists and dicts)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """A finished run whose sensors, set points and rewards are inf, -inf, nan and 1.5 in turn;
    afterwards, no process of the module's commands may survive."""
    ws = Workspace(tmp_path_factory.mktemp("nonfinite"))
    (ws.path / "run.yml").write_text(RUN_FILE)
    result = ws.run("start", "run.yml")
    assert result.returncode == 0, result.stderr
    yield ws
    assert not wait_until_gone(ws.sessions)


def test_the_store_holds_strict_json_with_the_values_as_strings(ran: Workspace) -> None:
    with sqlite3.connect(ran.store) as conn:
        actions = conn.execute(
            "select step, sensor_readings, actuator_setpoints, rewards, reward"
            " from muscle_actions order by step"
        ).fetchall()
        states = conn.execute(
            "select step, sensors, setpoints, rewards from world_states order by step"
        ).fetchall()
    assert len(actions) == STEPS and len(states) == STEPS
    for step, sensors, setpoints, rewards, reward in actions:
        value = CYCLE[step % 4]
        assert same(
            from_strict_json(strict_loads(sensors)), {"env.0": value, "env.1": [value, -value]}
        )
        assert same(from_strict_json(strict_loads(setpoints)), {"env.0": -value})
        assert same(from_strict_json(strict_loads(rewards)), {"r": CYCLE[(step + 1) % 4]})
        total = CYCLE[(step + 1) % 4]
        assert reward is None if math.isnan(total) else reward == total  # SQLite: NaN is NULL
    assert '"inf"' in actions[0][1] and '"-inf"' in actions[0][1] and "null" not in actions[0][1]
    for step, sensors, _, rewards in states:
        assert same(from_strict_json(strict_loads(sensors))["env.0"], CYCLE[step % 4])
        assert same(from_strict_json(strict_loads(rewards)), {"r": CYCLE[step % 4]})


@pytest.mark.parametrize("table", ["muscle_actions", "world_states"])
def test_a_json_export_is_strict_and_reads_back_as_the_query_gives(
    ran: Workspace, table: str
) -> None:
    result = ran.run("results", RUN, "--table", table, "-o", f"{table}.json")
    assert result.returncode == 0, result.stderr

    exported = strict_loads((ran.path / f"{table}.json").read_text())

    frame = getattr(query, table)(RUN, store_uri=ran.store_uri)
    assert len(exported) == len(frame) == STEPS
    for row, (_, expected) in zip(exported, frame.iterrows(), strict=True):
        for name, value in row.items():
            assert same(from_strict_json(value), expected[name]) or (
                value is None and pd.isna(expected[name])
            ), (name, value, expected[name])


def test_the_expanded_query_gives_floats(ran: Workspace) -> None:
    frame = query.muscle_actions(RUN, store_uri=ran.store_uri, expand=True)

    assert frame["sensor.env.0"].dtype == "float64"
    assert frame["setpoint.env.0"].dtype == "float64"
    assert frame["reward"].dtype == "float64"
    expected = pd.Series([CYCLE[step % 4] for step in range(STEPS)], name="sensor.env.0")
    pd.testing.assert_series_equal(frame["sensor.env.0"], expected)
    assert frame["sensor.env.1"].tolist()[0] == [math.inf, -math.inf]


def test_an_expanded_csv_export_reads_back_as_the_query_gives(ran: Workspace) -> None:
    result = ran.run("results", RUN, "--expand", "-o", "actions.csv")
    assert result.returncode == 0, result.stderr
    path = ran.path / "actions.csv"

    with path.open(newline="") as f:
        cells = list(csv.DictReader(f))
    for row in cells:  # the JSON cells are strict JSON
        strict_loads(row["rewards"])
        strict_loads(row["sensor.env.1"])
    assert [row["sensor.env.0"] for row in cells[:4]] == ["inf", "-inf", "nan", "1.5"]

    frame = query.muscle_actions(RUN, store_uri=ran.store_uri, expand=True)
    read = pd.read_csv(path)
    for name in ("sensor.env.0", "setpoint.env.0", "reward", "objective"):
        pd.testing.assert_series_equal(read[name], frame[name], check_names=True)
    for cell, expected in zip(read["rewards"], frame["rewards"], strict=True):
        assert same(from_strict_json(strict_loads(cell)), expected)


def test_a_parquet_export_keeps_the_floats(ran: Workspace) -> None:
    result = ran.run("results", RUN, "--expand", "-o", "actions.parquet")
    assert result.returncode == 0, result.stderr

    read = pd.read_parquet(ran.path / "actions.parquet")

    frame = query.muscle_actions(RUN, store_uri=ran.store_uri, expand=True)
    for name in ("sensor.env.0", "setpoint.env.0", "reward", "objective"):
        pd.testing.assert_series_equal(read[name], frame[name])
    for cell, expected in zip(read["sensor.env.1"], frame["sensor.env.1"], strict=True):
        assert same(from_strict_json(strict_loads(cell)), expected)


def test_the_frame_of_a_json_export_equals_the_query_frame(ran: Workspace) -> None:
    result = ran.run("results", RUN, "--table", "world_states", "--format", "json")
    assert result.returncode == 0, result.stderr

    exported = [
        {name: from_strict_json(value) for name, value in row.items()}
        for row in strict_loads(result.stdout)
    ]

    frame = query.world_states(RUN, store_uri=ran.store_uri)
    read = pd.DataFrame.from_records(exported, columns=list(frame.columns))
    assert_frame_equal(
        read.drop(columns=list(set(JSON_COLUMNS) & set(frame.columns))),
        frame.drop(columns=list(set(JSON_COLUMNS) & set(frame.columns))),
    )
