"""Non-finite numbers through JSON (issue 9, defect 15): the strings "inf", "-inf" and "nan"
in the store's JSON columns and in exports, floats again when read; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from pandas.testing import assert_frame_equal

from palaestra.cli.main import cli
from palaestra.core.information import SensorInformation, json_value
from palaestra.core.spaces import Box, Tuple
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import episode_values
from palaestra.store import query, rows
from palaestra.store.engine import make_engine
from palaestra.store.writer import StoreWriter
from tests.conftest import actions_message, cli_runner, world_message
from tests.unit.test_store_query import phase_start, request, run_start

INF, NAN = math.inf, math.nan


def strict_loads(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_to_strict_json_names_the_non_finite_floats_and_keeps_the_rest() -> None:
    from palaestra.core.information import from_strict_json, to_strict_json

    value = {
        "a": [INF, -INF, NAN, 1.5, None, "x"],
        "b": (np.float32(-INF), np.float64(2.0)),
        "c": 3,
    }

    strict = to_strict_json(value)

    assert strict == {"a": ["inf", "-inf", "nan", 1.5, None, "x"], "b": ["-inf", 2.0], "c": 3}
    back = from_strict_json(strict_loads(json.dumps(strict, allow_nan=False)))
    assert (
        back["a"][:2] == [INF, -INF]
        and math.isnan(back["a"][2])
        and back["a"][3:] == [1.5, None, "x"]
    )
    assert back["b"] == [-INF, 2.0]


def test_a_box_reads_the_strings_back_as_floats() -> None:
    from palaestra.core.information import to_strict_json

    box = Box(-INF, INF, shape=(3,), dtype="float32")
    x = np.array([INF, -INF, NAN], dtype=np.float32)

    stored = strict_loads(json.dumps(to_strict_json(json_value(SensorInformation(x, box, "s")))))

    assert stored == ["inf", "-inf", "nan"]
    np.testing.assert_array_equal(box.from_json_value(stored), x)
    pair = Tuple(box, Box(0, 1, shape=()))
    back = pair.from_json_value([stored, 0.5])
    np.testing.assert_array_equal(back[0], x)


def test_the_store_s_json_columns_are_strict_and_read_back_as_floats(tmp_path: Path) -> None:
    uri = write_non_finite(f"sqlite:///{tmp_path}/store.db")
    engine = make_engine(uri)
    try:
        with engine.connect() as connection:
            raw = connection.exec_driver_sql(
                "select sensor_readings, rewards, reward from muscle_actions order by step"
            ).all()
    finally:
        engine.dispose()

    assert [strict_loads(sensors) for sensors, _, _ in raw] == [
        {"env.0": "inf", "env.1": ["-inf", None]},
        {"env.0": "nan", "env.1": [1.0, None]},
    ]
    assert [reward for _, _, reward in raw] == [INF, INF]
    frame = query.muscle_actions("run-nf", store_uri=uri, expand=True)
    assert frame["sensor.env.0"].tolist()[0] == INF and math.isnan(frame["sensor.env.0"][1])
    assert frame["sensor.env.0"].dtype == "float64"
    assert frame["rewards"].tolist() == [{"r": INF}, {"r": INF}]


def test_experiment_show_and_results_json_are_strict(tmp_path: Path) -> None:
    uri = write_non_finite(f"sqlite:///{tmp_path}/store.db")
    runner = cli_runner({"PALAESTRA_STORE_URI": uri, "PALAESTRA_DATA_PATH": None})

    shown = runner.invoke(cli, ["experiment-show", "run-nf", "--format", "json"])
    exported = runner.invoke(cli, ["results", "run-nf", "--format", "json"])

    assert shown.exit_code == 0, shown.output
    (rewards,) = strict_loads(shown.stdout)["rewards"]
    assert (rewards["mean"], rewards["min"], rewards["max"]) == ("inf", "inf", "inf")
    assert exported.exit_code == 0, exported.output
    rows = strict_loads(exported.stdout)
    assert [row["reward"] for row in rows] == ["inf", "inf"]
    assert rows[0]["sensor_readings"] == {"env.0": "inf", "env.1": ["-inf", None]}


def test_sqlite_and_postgresql_give_the_same_non_finite_frames(
    tmp_path: Path, pg_uri: str
) -> None:
    sqlite = write_non_finite(f"sqlite:///{tmp_path}/store.db")
    postgres = write_non_finite(pg_uri)

    for table in (query.muscle_actions, query.world_states):
        expected = table("run-nf", store_uri=sqlite, expand=True)
        assert_frame_equal(table("run-nf", store_uri=postgres, expand=True), expected)
    assert query.world_states("run-nf", store_uri=postgres)["rewards"].tolist()[0] == {"r": -INF}


def write_non_finite(uri: str) -> str:
    """A run ``run-nf`` with two steps of non-finite sensors, set points and rewards."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-nf", "nf", "exp-nf")).ids["instance"]
        ids = request(writer, phase_start(instance, 0, "only", "train", 1, 1)).ids
        writer.accept(
            world_message(
                ids["environment:myenv"],
                0,
                [
                    m.WorldStateRow(0, 1, {"env.0": INF}, {"env.1": NAN}, {"r": -INF}, False),
                    m.WorldStateRow(0, 2, {"env.0": -INF}, {"env.1": 0.5}, {"r": NAN}, True),
                ],
            )
        )
        writer.accept(
            actions_message(
                ids["agent:attacker"],
                0,
                [
                    m.MuscleActionRow(
                        0,
                        0,
                        {"env.0": INF, "env.1": [-INF, None]},
                        {"env.1": NAN},
                        {"r": INF},
                        INF,
                        False,
                    ),
                    m.MuscleActionRow(
                        0,
                        1,
                        {"env.0": NAN, "env.1": [1.0, None]},
                        {"env.1": -INF},
                        {"r": INF},
                        None,
                        True,
                    ),
                ],
            )
        )
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_a_nan_reward_or_objective_reads_back_alike_from_sqlite_and_postgresql(
    tmp_path: Path, pg_uri: str
) -> None:
    """A step whose reward total or objective was NaN: SQLite (which has no NaN) stored NULL,
    PostgreSQL NaN, so the rows (``rows.muscle_actions``, ``results --format json``: ``null``
    against ``"nan"``) and the episode's sums (``results --table episode_rewards``, ``plot``:
    1.0 against NaN) differed. Both stores now hold NULL (a lockstep ``late_by`` likewise)."""
    stores = [write_nan(f"sqlite:///{tmp_path}/store.db"), write_nan(pg_uri)]

    for uri in stores:
        actions = rows.muscle_actions("run-nan", store_uri=uri)
        assert [(r["reward"], r["objective"]) for r in actions] == [(None, None), (1.0, INF)]
        assert actions[0]["rewards"]["r"] != actions[0]["rewards"]["r"]  # (NaN in the JSON)
        assert [r["late_by"] for r in rows.world_states("run-nan", store_uri=uri)] == [None]
        summed = rows.episode_rewards("run-nan", store_uri=uri)
        assert [(r["reward"], r["objective"], r["steps"]) for r in summed] == [(1.0, INF, 2)]
    assert_frame_equal(
        query.episode_rewards("run-nan", store_uri=stores[1]),
        query.episode_rewards("run-nan", store_uri=stores[0]),
    )


def write_nan(uri: str) -> str:
    """A run ``run-nan``: an agent's two steps, the first with a NaN reward and objective."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-nan", "nan", "exp-nan")).ids["instance"]
        ids = request(writer, phase_start(instance, 0, "only", "train", 1, 1)).ids
        steps = [
            m.MuscleActionRow(0, 0, {}, {}, {"r": NAN}, NAN, False),
            m.MuscleActionRow(0, 1, {}, {}, {"r": 1.0}, INF, True),
        ]
        writer.accept(actions_message(ids["agent:attacker"], 0, steps))
        state = m.WorldStateRow(0, 1, {}, {}, {"r": NAN}, False, late_by=NAN)
        writer.accept(world_message(ids["environment:myenv"], 0, [state]))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_an_episode_whose_sum_is_nan_reads_nan_from_sqlite_and_postgresql(
    tmp_path: Path, pg_uri: str
) -> None:
    """An episode whose steps' rewards (and objectives) were inf and -inf sums to NaN:
    PostgreSQL's sum said so, SQLite's (which makes a NaN NULL) said None, as of an episode
    without any reward, so ``results --table episode_rewards`` showed ``nan`` on one store and
    nothing on the other, and ``experiment-show`` ``nan`` against ``-``."""
    stores = [write_opposite(f"sqlite:///{tmp_path}/store.db"), write_opposite(pg_uri)]

    for uri in stores:
        summed = rows.episode_rewards("run-opposite", store_uri=uri)
        assert [r["steps"] for r in summed] == [2, 1]
        assert str((summed[0]["reward"], summed[0]["objective"])) == "(nan, nan)", uri
        assert (summed[1]["reward"], summed[1]["objective"]) == (None, None)  # (no numbers)
    assert_frame_equal(
        query.episode_rewards("run-opposite", store_uri=stores[1]),
        query.episode_rewards("run-opposite", store_uri=stores[0]),
    )


def write_opposite(uri: str) -> str:
    """A run ``run-opposite``: episode 0 of an agent, two steps with the rewards and objectives
    inf and -inf; episode 1, a step without a numeric reward or an objective."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-opposite", "opp", "exp-opp")).ids["instance"]
        ids = request(writer, phase_start(instance, 0, "only", "train", 1, 2)).ids
        steps = [
            m.MuscleActionRow(0, 0, {}, {}, {"r": INF}, INF, False),
            m.MuscleActionRow(0, 1, {}, {}, {"r": -INF}, -INF, True),
            m.MuscleActionRow(1, 0, {}, {}, {"r": "none"}, None, True),
        ]
        writer.accept(actions_message(ids["agent:attacker"], 0, steps))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_an_episode_with_a_nan_step_reward_is_nan_in_every_record_mode(
    tmp_path: Path, pg_uri: str
) -> None:
    """A step whose reward was NaN (stored NULL) was left out of the episode's sum where the
    phase recorded every step: ``results --table episode_rewards``, ``experiment-show``,
    ``plot`` and the exports said 1.0 where the run's summary, ``query.episodes`` and the same
    phase with ``record: {every: N}`` said NaN (the episode's reward as the run made it)."""
    stores = [write_nan_episodes(f"sqlite:///{tmp_path}/store.db"), write_nan_episodes(pg_uri)]

    for uri in stores:
        summed = rows.episode_rewards("run-nan-episode", agent="attacker", store_uri=uri)
        shown = [(r["phase"], r["agent"], r["episode"], r["steps"], r["reward"]) for r in summed]
        assert str(shown) == str(
            [(0, "attacker", 0, 2, NAN), (0, "attacker", 1, 1, 2.0), (1, "attacker", 0, 2, NAN)]
        ), uri
        assert summed[0]["objective"] == 1.0  # (a NaN objective still counts as none)
    assert_frame_equal(
        query.episode_rewards("run-nan-episode", store_uri=stores[1]),
        query.episode_rewards("run-nan-episode", store_uri=stores[0]),
    )


def write_nan_episodes(uri: str) -> str:
    """A run ``run-nan-episode``: phase 0 records every step, phase 1 every other one; in each
    the agent's episode 0 has a NaN reward and then 1.0 (its reward NaN, as the run sums it);
    phase 0's episode 1 a reward of 2.0."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-nan-episode", "ne", "exp-ne")).ids["instance"]
        for index, every in enumerate((1, 2)):
            start = phase_start(instance, index, f"p{index}", "train", 1, 2 - index)
            ids = request(
                writer, msgspec.structs.replace(start, config={"record_every": every})
            ).ids
            steps = [
                m.MuscleActionRow(0, 0, {}, {}, {"r": NAN}, NAN, False),
                m.MuscleActionRow(0, 1, {}, {}, {"r": 1.0}, 1.0, True),
                m.MuscleActionRow(1, 0, {}, {}, {"r": 2.0}, 2.0, True),
            ]
            writer.accept(actions_message(ids["agent:attacker"], 0, steps[: 3 - index]))
            ended = [
                m.EpisodeEnded(
                    phase=index,
                    worker=0,
                    episode=e,
                    started_at=e,
                    ended_at=e + 0.5,
                    steps=2 - e,
                    rewards={"attacker": reward},
                )  # fmt: skip
                for e, reward in enumerate([NAN, 2.0][: 2 - index])
            ]
            rows_ = [episode_values(ids["phase"], row) for row in ended]
            writer.accept(m.Rows(table="episodes", rows=rows_))
            request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_the_writer_knows_every_number_column_of_the_rows_producers_send() -> None:
    from sqlalchemy import Float

    from palaestra.core.wire.records import COLUMNS
    from palaestra.store.driver import FLOAT_COLUMNS
    from palaestra.store.tables import metadata

    floats = {
        table: tuple(c.name for c in metadata.tables[table].c if isinstance(c.type, Float))
        for table in COLUMNS
    }
    assert {table: columns for table, columns in floats.items() if columns} == FLOAT_COLUMNS
