"""Tests of palaestra.store.query and palaestra.store.rows on stores the StoreWriter wrote.

``write_store`` (also used by tests/unit/test_cli_results.py) writes the same runs, with the
same timestamps, to any store URI, so SQLite and PostgreSQL can be compared frame by frame.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from sqlalchemy import delete, event, select, update

from palaestra.core.errors import InvalidInputError, StoreError
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import episode_values
from palaestra.store import query, rows
from palaestra.store import tables as t
from palaestra.store import writer as writer_module
from palaestra.store.engine import make_engine
from palaestra.store.schema import METADATA
from palaestra.store.writer import StoreWriter
from tests.conftest import actions_message, world_message

RUN = "run-q"
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
AGENTS = ("attacker", "defender")


# --- writing a store -------------------------------------------------------------------------


class Clock:
    """A stand-in for ``utcnow``: one second later at every call, from T0."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> dt.datetime:
        self.ticks += 1
        return T0 + dt.timedelta(seconds=self.ticks, microseconds=250)


def request(writer: StoreWriter, message: m.Msg) -> Any:
    return asyncio.run(writer.dispatch(message))


def run_start(run: str, instance: str, experiment: str) -> m.StoreRunStart:
    return m.StoreRunStart(
        experiment_uid=experiment,
        run_uid=run,
        instance_uid=instance,
        document=f"uid: {run}\n",
        file="run.yml",
        seed=42,
        palaestra_version="0.1.0",
        host="box",
        code_revision="abc123",
    )


def phase_agent(name: str, loaded_from: dict[str, Any] | None = None) -> m.PhaseAgent:
    return m.PhaseAgent(
        name=name,
        brain="pkg:Brain",
        muscle="pkg:Muscle",
        objective="pkg:Objective",
        config={"lr": 0.5},
        seeds={"brain": 1},
        loaded_from=loaded_from,
    )


def phase_start(
    instance_id: int, index: int, name: str, mode: str, workers: int, episodes: int
) -> m.StorePhaseStart:
    return m.StorePhaseStart(
        instance_id=instance_id,
        index=index,
        name=name,
        mode=mode,
        workers=workers,
        episodes=episodes,
        config={"episodes": episodes},
        environments=[
            m.PhaseEnvironment(uid="myenv", name="pkg:Env", params={"size": 3}, seeds=[7, 8])
        ],
        agents=[
            phase_agent("attacker"),
            phase_agent("defender", {"brain_state_id": 1} if index else None),
        ],
    )


def world_rows(env_id: int, worker: int, episodes: int, phase: int) -> m.Rows:
    return world_message(
        env_id,
        worker,
        [
            m.WorldStateRow(
                e,
                s,
                {"myenv.0": phase + s / 4, "myenv.1": [s, worker]},
                {"myenv.2": s % 2},
                {"myenv.r": s / 2},
                s == 2,
            )  # fmt: skip
            for e in range(episodes)
            for s in range(3)
        ],
    )


def action_rows(
    agent_id: int,
    agent: str,
    worker: int,
    episodes: int,
    rewards: dict[str, Any] | None = None,
) -> m.Rows:
    actuator = "myenv.2" if agent == "attacker" else "myenv.3"
    return actions_message(
        agent_id,
        worker,
        [
            m.MuscleActionRow(
                e,
                s,
                {"myenv.0": s / 4},
                {actuator: s + e},
                {"myenv.r": (s + 1) / 4, "x": [0.5]} if rewards is None else rewards,
                None if s == 0 else 0.5 * worker,
                s == 2,
            )  # fmt: skip
            for e in range(episodes)
            for s in range(3)
        ],
    )


def episode_rows(phase_id: int, worker: int, episodes: Iterable[int]) -> m.Rows:
    """The ``episodes`` rows of ``episodes`` of ``worker`` (3 steps each), as the simulation
    controller sends them as they end."""
    ended = [
        m.EpisodeEnded(phase=0, worker=worker, episode=e, started_at=e, ended_at=e + 0.5, steps=3)
        for e in episodes
    ]
    return m.Rows(table="episodes", rows=[episode_values(phase_id, row) for row in ended])


def record_phase(
    writer: StoreWriter, instance_id: int, index: int, name: str, mode: str, shape: tuple[int, int]
) -> None:
    """A phase of ``shape`` (workers, episodes) with 3 steps per episode, written workers
    and agents in reverse (the queries must order them), and a dump per agent."""
    workers, episodes = shape
    ids = request(writer, phase_start(instance_id, index, name, mode, workers, episodes)).ids
    for worker in reversed(range(workers)):
        writer.accept(world_rows(ids["environment:myenv"], worker, episodes, index))
        for agent in reversed(AGENTS):
            writer.accept(action_rows(ids[f"agent:{agent}"], agent, worker, episodes))
        writer.accept(episode_rows(ids["phase"], worker, range(episodes)))
    if index == 0:
        checkpoint = m.BrainDump(
            agent_id=ids["agent:attacker"], tag="checkpoint", path="", dump=b"c"
        )
        writer.accept(checkpoint)
    for agent in AGENTS:
        dump = f"{agent}-{index}".encode()
        final = m.BrainDump(
            agent_id=ids[f"agent:{agent}"], tag="final", path=f"{agent}.bin", dump=dump
        )
        writer.accept(final)
    request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))


def write_store(uri: str) -> str:
    """Write to ``uri`` (timestamps from a fresh :class:`Clock`):

    - ``run-q`` (experiment ``exp-q``): instance ``old`` (phase 0 only, ended in error) and
      instance ``new`` (phase 0 ``learn``: train, 2 workers x 2 episodes; phase 1 ``check``:
      test, 1 x 1; finished);
    - ``run-q2`` (``exp-q``): instance ``q2``, still running, no phase;
    - ``run-other`` (``exp-other``): instance ``o1``, one phase, finished.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer_module, "utcnow", Clock())
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            write_runs(writer)
        finally:
            asyncio.run(writer.teardown())
    return uri


def write_runs(writer: StoreWriter) -> None:
    old = request(writer, run_start(RUN, "old", "exp-q")).ids["instance"]
    record_phase(writer, old, 0, "learn", "train", (1, 1))
    reason = "boom: the muscle died\nTraceback ..."
    request(writer, m.StoreRunEnd(instance_id=old, status="error", reason=reason))
    new = request(writer, run_start(RUN, "new", "exp-q")).ids["instance"]
    record_phase(writer, new, 0, "learn", "train", (2, 2))
    record_phase(writer, new, 1, "check", "test", (1, 1))
    request(writer, m.StoreRunEnd(instance_id=new, status="finished"))
    request(writer, run_start("run-q2", "q2", "exp-q"))
    other = request(writer, run_start("run-other", "o1", "exp-other")).ids["instance"]
    record_phase(writer, other, 0, "only", "train", (1, 1))
    request(writer, m.StoreRunEnd(instance_id=other, status="finished"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_store(f"sqlite:///{tmp_path_factory.mktemp('query')}/palaestra.db")


# --- experiments and runs --------------------------------------------------------------------


def test_experiments(store: str) -> None:
    frame = query.experiments(store_uri=store)

    assert frame.to_dict("records") == [
        {
            "experiment_uid": "exp-q",
            "created_at": pd.Timestamp(T0) + pd.Timedelta("1.00025s"),
            "runs": 2,
            "instances": 3,
        },  # fmt: skip
        {
            "experiment_uid": "exp-other",
            "created_at": frame["created_at"][1],
            "runs": 1,
            "instances": 1,
        },  # fmt: skip
    ]
    assert str(frame["created_at"].dtype) == "datetime64[us, UTC]"


def test_runs_one_row_per_instance(store: str) -> None:
    frame = query.runs(store_uri=store)

    assert list(frame.columns) == [
        "run_uid", "experiment_uid", "instance_uid", "status", "reason", "started_at",
        "finished_at", "duration_s", "phases", "episodes", "palaestra_version", "code_revision",
    ]  # fmt: skip
    assert frame[["run_uid", "instance_uid", "status", "phases", "episodes"]].values.tolist() == [
        [RUN, "old", "error", 1, 1],
        [RUN, "new", "finished", 2, 5],
        ["run-q2", "q2", "stale", 0, 0],  # left running in 2024
        ["run-other", "o1", "finished", 1, 1],
    ]
    assert frame["reason"][0] == "boom: the muscle died\nTraceback ..."
    finished = frame.dropna(subset=["finished_at"])
    durations = (finished["finished_at"] - finished["started_at"]).dt.total_seconds()
    assert (durations == finished["duration_s"]).all()
    assert (durations > 0).all()
    assert pd.isna(frame["finished_at"][2]) and pd.isna(frame["duration_s"][2])
    assert str(frame["episodes"].dtype) == "int64"


def test_runs_of_some_experiments(store: str) -> None:
    assert query.runs(experiment="exp-other", store_uri=store)["run_uid"].tolist() == ["run-other"]
    assert len(query.runs(experiment=["exp-q", "exp-other"], store_uri=store)) == 4
    assert query.runs(experiment="nope", store_uri=store).empty


# --- phases, agents, environments ------------------------------------------------------------


def test_phases_of_the_newest_instance_or_the_one_named(store: str) -> None:
    frame = query.phases(RUN, store_uri=store)

    assert frame[["phase", "name", "mode", "workers", "episodes", "status"]].values.tolist() == [
        [0, "learn", "train", 2, 2, "finished"],
        [1, "check", "test", 1, 1, "finished"],
    ]
    assert frame["config"].tolist() == [{"episodes": 2}, {"episodes": 1}]
    assert (frame["duration_s"] > 0).all()
    old = query.phases(RUN, store_uri=store, instance="old")
    assert old[["phase", "workers"]].values.tolist() == [[0, 1]]


def test_agents_per_phase(store: str) -> None:
    frame = query.agents(RUN, store_uri=store)

    assert frame[["phase", "phase_name", "agent", "brain"]].values.tolist() == [
        [0, "learn", "attacker", "pkg:Brain"],
        [0, "learn", "defender", "pkg:Brain"],
        [1, "check", "attacker", "pkg:Brain"],
        [1, "check", "defender", "pkg:Brain"],
    ]
    assert frame["loaded_from"].tolist() == [None, None, None, {"brain_state_id": 1}]
    assert frame["config"][0] == {"lr": 0.5}
    checked = query.agents(RUN, phase="check", agent="defender", store_uri=store)
    assert checked[["phase", "agent"]].values.tolist() == [[1, "defender"]]


def test_environments_per_phase(store: str) -> None:
    frame = query.environments(RUN, phase=1, store_uri=store)

    assert frame.to_dict("records") == [
        {
            "phase": 1,
            "phase_name": "check",
            "environment": "myenv",
            "name": "pkg:Env",
            "params": {"size": 3},
            "seeds": [7, 8],
        },  # fmt: skip
    ]


# --- records ---------------------------------------------------------------------------------


def test_world_states_are_ordered_and_typed(store: str) -> None:
    frame = query.world_states(RUN, store_uri=store)

    assert len(frame) == 2 * 2 * 3 + 3
    keys = frame[["phase", "worker", "episode", "step"]].values.tolist()
    assert keys == sorted(keys)
    assert frame.iloc[1].to_dict() == {
        "phase": 0, "phase_name": "learn", "mode": "train", "environment": "myenv",
        "worker": 0, "episode": 0, "step": 1, "sensors": {"myenv.0": 0.25, "myenv.1": [1, 0]},
        "setpoints": {"myenv.2": 1}, "rewards": {"myenv.r": 0.5}, "done": False,
        "terminated": None, "truncated": None, "late_by": None,
    }  # fmt: skip
    assert frame.dtypes[["phase", "worker", "episode", "step"]].tolist() == ["int64"] * 4
    assert frame["done"].dtype == bool


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"phase": 1}, [(1, 0, 0)] * 3),
        ({"phase": "check"}, [(1, 0, 0)] * 3),
        ({"phase": [0, "check"], "worker": 1, "episode": 1}, [(0, 1, 1)] * 3),
        ({"mode": "test"}, [(1, 0, 0)] * 3),
        ({"environment": "other"}, []),
    ],
)
def test_world_states_filters(store: str, filters: dict[str, Any], expected: list[Any]) -> None:
    frame = query.world_states(RUN, store_uri=store, **filters)
    assert [tuple(r) for r in frame[["phase", "worker", "episode"]].values.tolist()] == expected


def test_muscle_actions_are_ordered_by_phase_agent_worker_episode_step(store: str) -> None:
    frame = query.muscle_actions(RUN, store_uri=store)

    assert len(frame) == 2 * (2 * 2 * 3 + 3)
    assert list(frame.columns) == [
        "phase", "phase_name", "mode", "agent", "worker", "episode", "step", "sensor_readings",
        "actuator_setpoints", "rewards", "reward", "objective", "done", "terminated", "truncated",
        "stale_policy",
    ]  # fmt: skip
    keys = frame[["phase", "agent", "worker", "episode", "step"]].values.tolist()
    assert keys == sorted(keys)
    first = frame.iloc[0].to_dict()
    assert first["rewards"] == {"myenv.r": 0.25, "x": [0.5]}
    assert first["reward"] == 0.75
    assert pd.isna(first["objective"])


@pytest.mark.parametrize(
    ("filters", "rows_expected"),
    [
        ({"phase": 0}, 24),
        ({"phase": "learn", "agent": "defender"}, 12),
        ({"agent": ["attacker", "defender"], "episode": 1}, 12),
        ({"mode": "test", "worker": 0}, 6),
        ({"phase": 0, "worker": [1], "episode": [0, 1], "agent": "attacker"}, 6),
        ({"agent": "nobody"}, 0),
    ],
)
def test_muscle_actions_filters(store: str, filters: dict[str, Any], rows_expected: int) -> None:
    frame = query.muscle_actions(RUN, store_uri=store, **filters)

    assert len(frame) == rows_expected
    for name, value in filters.items():
        column = "phase" if name == "phase" and isinstance(value, int) else name
        column = "phase_name" if name == "phase" and isinstance(value, str) else column
        allowed = value if isinstance(value, list) else [value]
        assert frame[column].isin(allowed).all()


def test_filters_take_numpy_values_and_reject_others(store: str) -> None:
    frame = query.muscle_actions(RUN, store_uri=store)
    last = frame["episode"].max()  # a numpy integer

    assert len(query.muscle_actions(RUN, episode=last, store_uri=store)) == 12
    workers = frame["worker"].unique()  # a numpy array
    assert len(query.muscle_actions(RUN, worker=workers, phase=0, store_uri=store)) == 24
    with pytest.raises(TypeError, match="integers or strings, got 1.5"):
        query.muscle_actions(RUN, episode=1.5, store_uri=store)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "filters",
    [{"phase": []}, {"agent": []}, {"phase": [], "agent": "attacker"}],
)
def test_an_empty_list_of_values_matches_no_row(store: str, filters: dict[str, Any]) -> None:
    assert rows.muscle_actions(RUN, **filters, store_uri=store) == []  # phase=[]: not every row
    assert rows.episode_rewards(RUN, **filters, store_uri=store) == []
    assert rows.agents(RUN, **filters, store_uri=store) == []


@pytest.mark.parametrize("filters", [{"episode": 2**64}, {"phase": -(2**70)}, {"worker": [2**63]}])
def test_an_integer_beyond_64_bits_matches_no_row(store: str, filters: dict[str, Any]) -> None:
    assert rows.muscle_actions(RUN, **filters, store_uri=store) == []  # no OverflowError
    with rows.each_row("world_states", RUN, **filters, store_uri=store) as (_, each):
        assert list(each) == []


def test_an_integer_beyond_64_bits_among_others_leaves_theirs(store: str) -> None:
    assert len(rows.muscle_actions(RUN, phase=[0, 2**70], store_uri=store)) == 24
    assert len(rows.muscle_actions(RUN, phase=[2**70, "check"], store_uri=store)) == 6


def test_muscle_actions_of_an_older_instance(store: str) -> None:
    frame = query.muscle_actions(RUN, agent="attacker", store_uri=store, instance="old")
    assert frame[["phase", "worker", "episode", "step"]].values.tolist() == [
        [0, 0, 0, s] for s in range(3)
    ]


def test_expand_makes_one_column_per_uid(store: str) -> None:
    actions = query.muscle_actions(RUN, phase=1, expand=True, store_uri=store)
    worlds = query.world_states(RUN, phase=1, expand=True, store_uri=store)

    assert list(actions.columns) == [
        "phase", "phase_name", "mode", "agent", "worker", "episode", "step", "sensor.myenv.0",
        "setpoint.myenv.2", "setpoint.myenv.3", "rewards", "reward", "objective", "done",
        "terminated", "truncated", "stale_policy",
    ]  # fmt: skip
    assert actions["sensor.myenv.0"].tolist() == [0.0, 0.25, 0.5] * 2
    attacker = actions[actions["agent"] == "attacker"]
    assert attacker["setpoint.myenv.2"].tolist() == [0, 1, 2]
    assert attacker["setpoint.myenv.3"].isna().all()
    assert [c for c in worlds.columns if "." in c] == [
        "sensor.myenv.0", "sensor.myenv.1", "setpoint.myenv.2",
    ]  # fmt: skip
    assert worlds["sensor.myenv.1"].tolist() == [[0, 0], [1, 0], [2, 0]]


def test_episode_rewards_are_sums_per_episode(store: str) -> None:
    frame = query.episode_rewards(RUN, store_uri=store)
    actions = query.muscle_actions(RUN, store_uri=store)

    keys = ["phase", "phase_name", "mode", "agent", "worker", "episode"]
    expected = (
        actions.groupby(keys, sort=False)
        .agg(steps=("step", "size"), reward=("reward", "sum"), objective=("objective", "sum"))
        .reset_index()
        .assign(evaluation=False)  # (no evaluation rollouts)
    )
    assert_frame_equal(frame, expected, check_dtype=False)
    assert frame["reward"].tolist()[:1] == [0.25 + 0.5 + 0.75 + 3 * 0.5]
    only = query.episode_rewards(RUN, phase="check", agent="defender", store_uri=store)
    assert only[["phase", "agent", "worker", "episode", "steps"]].values.tolist() == [
        [1, "defender", 0, 0, 3]
    ]
    assert query.episode_rewards(RUN, mode="test", store_uri=store)["phase"].tolist() == [1, 1]


def episodes_ended(phase_id: int, steps: int, rewards: list[float]) -> m.Rows:
    """The ``episodes`` rows of worker 0's episodes 0, 1, ... of ``steps`` steps each, with
    the agent ``attacker``'s ``rewards``."""
    ended = [
        m.EpisodeEnded(
            phase=0,
            worker=0,
            episode=e,
            started_at=e,
            ended_at=e + 0.5,
            steps=steps,
            rewards={"attacker": reward},
        )
        for e, reward in enumerate(rewards)
    ]
    return m.Rows(table="episodes", rows=[episode_values(phase_id, e) for e in ended])


def test_an_episode_recording_paused_in_has_the_reward_the_run_summed(
    tmp_path: Path, pg_uri: str
) -> None:
    """Recording paused (``experiment-record pause``, ``context.pause_recording()``) from
    episode 1's second step to episode 2's second: those steps have no ``muscle_actions``
    rows, and ``episode_rewards`` (``experiment-show``, ``results``, ``plot``, the exports)
    gave the sums of the rest (2.0 and 2.0 with 2 steps, where the run's summary said 3.0).
    Such an episode has its ``episodes`` row's reward and steps, and no objective, as a phase
    that records fewer steps (``record: {every: N}``)."""
    for uri in (f"sqlite:///{tmp_path}/palaestra.db", pg_uri):
        writer = StoreWriter("store", uri)
        writer.open()
        try:
            instance = request(writer, run_start("gap-run", "gap", "exp-gap")).ids["instance"]
            ids = request(writer, phase_start(instance, 0, "learn", "train", 1, 3)).ids
            written = [(0, 0), (0, 1), (0, 2), (1, 0), (2, 2)]  # (paused at 1/1, resumed at 2/2)
            steps = [m.MuscleActionRow(e, s, {}, {}, {"r": 1.0}, 0.5, s == 2) for e, s in written]
            writer.accept(actions_message(ids["agent:attacker"], 0, steps))
            for episode, step, paused in ((1, 2, True), (2, 3, False)):  # (world steps from 1)
                gap = m.RecordingGapMark(
                    phase_id=ids["phase"], worker=0, episode=episode, step=step, paused=paused
                )
                writer.accept(gap)
            writer.accept(episodes_ended(ids["phase"], 3, [3.0] * 3))
            request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
            request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
        finally:
            asyncio.run(writer.teardown())

        found = rows.episode_rewards("gap-run", agent="attacker", store_uri=uri)
        assert [(r["episode"], r["steps"], r["reward"], r["objective"]) for r in found] == [
            (0, 3, 3.0, 1.5),
            (1, 3, 3.0, None),
            (2, 3, 3.0, None),
        ], uri


def test_evaluation_rollouts_are_marked_and_kept_apart_from_the_training_curve(
    tmp_path: Path,
) -> None:
    """With ``evaluate_every: 2`` a worker's episodes 2 and 5 are evaluation rollouts (test
    mode, stored as its episodes): ``experiment-show``'s rewards, its trend, ``plot`` and the
    exporters counted them as training episodes (6 episodes of mean 3.5 where the training
    ones' is 3.0, a curve with two rollouts' rewards in it). Rows mark them (``evaluation``),
    the summary keeps them apart, the training curve leaves them out and each is a point of
    the agent's evaluation series after the training episode it followed."""
    from palaestra.report import series, trend

    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("eval-run", "ev", "exp-ev")).ids["instance"]
        config = {"episodes": 4, "worker": 1, "evaluate_every": 2}
        started = phase_start(instance, 0, "learn", "train", 1, 4)
        ids = request(writer, msgspec.structs.replace(started, config=config)).ids
        rewards = [1.0, 2.0, 7.0, 3.0, 6.0, 2.0]  # (rollouts: 7.0 and 2.0)
        steps = [
            m.MuscleActionRow(episode, 0, {}, {}, {"r": reward}, 0.5, True)
            for episode, reward in enumerate(rewards)
        ]
        writer.accept(actions_message(ids["agent:attacker"], 0, steps))
        writer.accept(episodes_ended(ids["phase"], 1, rewards))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())

    found = rows.episode_rewards("eval-run", store_uri=uri)
    assert [(r["episode"], r["evaluation"]) for r in found] == [
        (0, False), (1, False), (2, True), (3, False), (4, False), (5, True),
    ]  # fmt: skip
    summary = rows.reward_summary(found)
    assert [(r["evaluation"], r["episodes"], r["mean"]) for r in summary] == [
        (False, 4, 3.0),
        (True, 2, 4.5),
    ]
    (line,) = trend.reward_trend("eval-run", store_uri=uri)
    assert line["episodes"] == 4
    curve, judged = series.load_series("eval-run", store_uri=uri)
    assert (curve.metric, curve.values, curve.episodes) == (
        "reward",
        (1.0, 2.0, 3.0, 6.0),
        (0, 1, 2, 3),
    )
    assert (judged.metric, judged.tag, judged.values) == (
        "evaluation",
        "evaluation/attacker",
        (7.0, 2.0),
    )
    assert judged.episodes == (1, 3)  # (after training episodes 1 and 3)
    assert judged.steps == (2, 4)


def test_brain_states_without_and_with_dumps(store: str) -> None:
    frame = query.brain_states(RUN, store_uri=store)

    assert frame[["phase", "agent", "tag", "path"]].values.tolist() == [
        [0, "attacker", "checkpoint", ""],
        [0, "attacker", "final", "attacker.bin"],
        [0, "defender", "final", "defender.bin"],
        [1, "attacker", "final", "attacker.bin"],
        [1, "defender", "final", "defender.bin"],
    ]
    assert "dump" not in frame.columns
    assert str(frame["created_at"].dtype) == "datetime64[us, UTC]"
    dumps = query.brain_states(RUN, agent="defender", with_dump=True, store_uri=store)
    assert dumps["dump"].tolist() == [b"defender-0", b"defender-1"]
    assert query.brain_states(RUN, phase="check", agent="attacker", store_uri=store)[
        "tag"
    ].tolist() == ["final"]


NO_PHASE = {"phase": 99}
FRAMES: list[tuple[str, tuple[str, ...], tuple[str, ...], dict[str, Any]]] = [
    ("runs", (), (), {"run": "run-none"}),
    ("phases", (RUN,), ("run-q2",), {}),  # (a run that has no phase)
    *[
        (name, (RUN,), (RUN,), NO_PHASE)
        for name in "agents environments world_states muscle_actions episodes".split()
    ],
    ("episode_rewards", (RUN,), (RUN,), NO_PHASE),
    ("brain_states", (RUN,), (RUN,), NO_PHASE),
]
"""A frame with rows, and one of the same reader without: the arguments of each."""


def test_a_frame_without_rows_has_the_columns_and_dtypes_of_one_with_rows(store: str) -> None:
    """pandas makes every column of a frame without rows ``object``: a phase filtered to no
    rows, or a run that failed before its first episode, gave counts, rewards, names and
    timestamps as ``object``, and a ``pd.concat`` of it with others' frames made theirs
    ``object`` too (``describe()`` counted rewards as categories)."""
    for name, with_rows, without, no_rows in FRAMES:
        read = getattr(query, name)
        full, empty = read(*with_rows, store_uri=store), read(*without, store_uri=store, **no_rows)
        assert len(full) and empty.empty, name
        assert list(empty.columns) == list(full.columns), name
        typed = {c: str(full[c].dtype) for c in full.columns if full[c].notna().all()}
        assert {c: str(empty[c].dtype) for c in typed} == typed, name
        together = pd.concat([full, empty], ignore_index=True)
        assert {c: str(together[c].dtype) for c in typed} == typed, name


def test_the_tables_without_rows_here_give_typed_frames_all_the_same(store: str) -> None:
    """The tables the store written here has no rows of (each dtype as pandas gives a
    frame of rows: the numbers of pandas's own inference)."""
    number, text = str(pd.Series([0]).dtype), str(pd.Series(["a"]).dtype)
    time = str(pd.Series([T0]).dtype)
    steps = {"phase": number, "phase_name": text, "mode": text}
    where = {"worker": number, "episode": number, "step": number}
    expected = {
        "statistics": steps | {"agent": text, "source": text} | where | {"statistics": "object"},
        "plugin_records": steps | {"source": text} | where | {"key": text, "value": "object"},
        "recording_gaps": steps
        | {"worker": number}
        | dict.fromkeys(["from_episode", "from_step", "to_episode", "to_step"], number),
        "code_reloads": steps
        | {"source": text}
        | where
        | {"module": text, "path": text, "ok": "bool", "error": "object", "at": time},
        "evaluations": steps
        | {"agent": text, "evaluation": number, "training_episodes": number}
        | {"worker": number, "episode": number, "metrics": "object"}
        | {"checkpoint_id": text, "checkpoint_hash": text, "at": time},
    }
    for name, dtypes in expected.items():
        frame = getattr(query, name)(RUN, store_uri=store)
        assert frame.empty, name
        assert {c: str(dtype) for c, dtype in frame.dtypes.items()} == dtypes, name


# --- errors, the store, the row layer --------------------------------------------------------


def test_an_unknown_run_names_the_known_ones(store: str) -> None:
    with pytest.raises(LookupError) as caught:
        query.muscle_actions("run-qq", store_uri=store)

    message = str(caught.value)
    assert "no run 'run-qq'" in message
    assert "it has: run-other, run-q2, run-q" in message
    assert "Did you mean 'run-q'?" in message or "Did you mean 'run-q2'?" in message
    assert isinstance(caught.value, InvalidInputError)  # the CLI reports it with exit 2


def test_an_unknown_instance_names_the_run_s_instances(store: str) -> None:
    with pytest.raises(LookupError, match="run 'run-q' has no instance 'x'.*old, new"):
        query.phases(RUN, store_uri=store, instance="x")


def test_an_unknown_run_in_an_empty_store(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/empty.db"
    StoreWriter("store", uri).open()
    with pytest.raises(LookupError, match="no run 'x' in the store .*: it has no runs"):
        query.agents("x", store_uri=uri)


def test_filters_are_sent_to_the_database(store: str) -> None:
    engine = make_engine(store)
    sent: list[tuple[str, Any]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def record(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        sent.append((statement, params))

    try:
        found = rows.muscle_actions(
            RUN, phase="learn", agent="attacker", episode=1, worker=[0, 1], mode="train",
            store_uri=engine,
        )  # fmt: skip
    finally:
        engine.dispose()

    assert len(found) == 6
    statement, params = sent[-1]
    where = statement.split("WHERE", 1)[1]
    for condition in (
        "experiment_run_phases.name = ?",
        "experiment_run_phases.mode = ?",
        "agents.name = ?",
        "muscle_actions.worker IN (?, ?)",
        "muscle_actions.episode = ?",
    ):
        assert condition in where
    assert {"learn", "train", "attacker", 1} <= set(params)


def test_row_functions_return_plain_dicts_with_columns(store: str) -> None:
    found = rows.world_states(RUN, phase=1, store_uri=store)
    assert isinstance(found, list) and isinstance(found[0], dict)
    assert list(found[0]) == list(found.columns)
    empty = rows.muscle_actions(RUN, agent="nobody", store_uri=store)
    assert empty == [] and "sensor_readings" in empty.columns
    expanded = query.muscle_actions(RUN, agent="nobody", expand=True, store_uri=store)
    assert expanded.empty and "sensor_readings" not in expanded.columns


def test_reward_summary(store: str) -> None:
    summary = rows.reward_summary(rows.episode_rewards(RUN, store_uri=store))
    episodes = query.episode_rewards(RUN, store_uri=store)
    expected = episodes.groupby(["phase", "agent"])["reward"].agg(["size", "mean", "min", "max"])

    assert [(r["phase"], r["agent"]) for r in summary] == list(expected.index)
    for row, (_, stats) in zip(summary, expected.iterrows(), strict=True):
        assert (row["episodes"], row["mean"], row["min"], row["max"]) == tuple(stats)


@pytest.mark.parametrize("at", [0, 1, 2])
def test_reward_summary_of_a_nan_episode_is_nan_wherever_it_is(at: int) -> None:
    rewards = [1.0, 2.0]
    rewards.insert(at, math.nan)
    columns = ("phase", "phase_name", "mode", "agent", "reward")
    found = [dict(zip(columns, (0, "learn", "train", "a", r), strict=True)) for r in rewards]
    episodes = rows.Rows(found, columns)

    (summary,) = rows.reward_summary(episodes)

    assert summary["episodes"] == 3
    assert all(math.isnan(summary[name]) for name in ("mean", "min", "max"))  # not 1.0, 2.0


def test_store_uri_none_follows_the_runtime_config(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PALAESTRA_STORE_URI", raising=False)
    assert rows.resolve_store_uri() == "sqlite:///palaestra.db"
    with pytest.raises(StoreError, match="no such store file: palaestra.db"):
        query.runs()
    Path("palaestra-runtime.yaml").write_text(f"store_uri: {store}\n")
    assert len(query.runs()) == 4
    monkeypatch.setenv("PALAESTRA_STORE_URI", "sqlite:///from-env.db")
    assert rows.resolve_store_uri() == "sqlite:///from-env.db"
    assert rows.resolve_store_uri(store) == store


@pytest.mark.parametrize("uri", ["none", "off", "OFF", ""])
def test_no_store_is_named_as_such_when_read(uri: str) -> None:
    """store_uri none (a run that records nothing) was read as 'not a valid database URL:
    Could not parse SQLAlchemy URL from given URL string'."""
    with pytest.raises(StoreError, match=f"store_uri is '{uri}', which records nothing"):
        make_engine(uri)


def test_a_missing_store_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such store"):
        query.runs(store_uri=f"sqlite:///{tmp_path}/missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_a_store_without_schema_raises_store_error(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/empty.db"
    make_engine(uri).dispose()
    with pytest.raises(StoreError, match="cannot read"):
        query.phases(RUN, store_uri=uri)


def test_without_pandas_the_error_names_the_extra(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'palaestra\[pandas\]'"):
        query.runs(store_uri=store)
    assert len(rows.runs(store_uri=store)) == 4  # the row layer needs no pandas


def test_delete_run_removes_it_and_keeps_the_others(tmp_path: Path) -> None:
    uri = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    before = rows.run_contents(RUN, store_uri=uri)

    deleted = rows.delete_run(RUN, store_uri=uri)

    assert before["experiment"] == "exp-q" and before["runs_of_experiment"] == 2
    assert {k: v for k, v in before.items() if k in deleted} == {
        k: v for k, v in deleted.items() if k in before
    }
    assert deleted["muscle_actions"] == 2 * 3 + 30 and deleted["experiments"] == 0
    assert [r["run_uid"] for r in rows.runs(store_uri=uri)] == ["run-q2", "run-other"]
    assert len(rows.muscle_actions("run-other", store_uri=uri)) == 6
    assert rows.delete_run("run-q2", store_uri=uri, force=True)["experiments"] == 1
    assert [r["experiment_uid"] for r in rows.experiments(store_uri=uri)] == ["exp-other"]


# --- SQLite and PostgreSQL -------------------------------------------------------------------

CALLS: list[tuple[str, Callable[[str], pd.DataFrame]]] = [
    ("experiments", lambda uri: query.experiments(store_uri=uri)),
    ("runs", lambda uri: query.runs(store_uri=uri)),
    ("phases", lambda uri: query.phases(RUN, store_uri=uri)),
    ("phases old", lambda uri: query.phases(RUN, store_uri=uri, instance="old")),
    ("agents", lambda uri: query.agents(RUN, store_uri=uri)),
    ("environments", lambda uri: query.environments(RUN, store_uri=uri)),
    ("world_states", lambda uri: query.world_states(RUN, store_uri=uri)),
    ("world_states x", lambda uri: query.world_states(RUN, phase=0, expand=True, store_uri=uri)),
    ("muscle_actions", lambda uri: query.muscle_actions(RUN, store_uri=uri)),
    ("muscle_actions x", lambda uri: query.muscle_actions(RUN, expand=True, store_uri=uri)),
    ("episode_rewards", lambda uri: query.episode_rewards(RUN, store_uri=uri)),
    ("brain_states", lambda uri: query.brain_states(RUN, with_dump=True, store_uri=uri)),
]


def test_sqlite_and_postgresql_give_identical_frames(tmp_path: Path, pg_uri: str) -> None:
    sqlite_uri = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    write_store(pg_uri)

    for name, call in CALLS:
        lite, pg = call(sqlite_uri), call(pg_uri)
        assert not lite.empty, name
        assert_frame_equal(lite, pg, obj=name)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_episodes_done_are_by_instance_oldest_first_then_by_phase(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As ``runs`` and ``phases`` order theirs, on either store; an instance recorded before
    ``episodes`` rows (its episodes counted by their actions) in its place among the others.
    (They came without an order: SQLite gave them by instance uid, new before old, and the
    instances of actions last.)"""
    uri = (
        f"sqlite:///{tmp_path}/palaestra.db"
        if backend == "sqlite"
        else request.getfixturevalue("pg_uri")
    )
    write_store(uri)
    done = [(r["instance_uid"], r["phase"], r["done"]) for r in rows.episodes_done(store_uri=uri)]
    assert done == [("old", 0, 1), ("new", 0, 4), ("new", 1, 1), ("o1", 0, 1)]
    engine = make_engine(uri)
    with engine.begin() as connection:  # ``old`` as a store before revision 0005 has it
        instances = METADATA.tables["experiment_run_instances"]
        phases = METADATA.tables["experiment_run_phases"]
        (old,) = connection.execute(select(instances.c.id).where(instances.c.uid == "old")).one()
        of_old = select(phases.c.id).where(phases.c.experiment_run_instance_id == old)
        episodes = METADATA.tables["episodes"]
        connection.execute(delete(episodes).where(episodes.c.experiment_run_phase_id.in_(of_old)))
        connection.execute(
            update(instances).where(instances.c.id == old).values(heartbeat_at=None)
        )
    engine.dispose()
    done = [(r["instance_uid"], r["phase"], r["done"]) for r in rows.episodes_done(store_uri=uri)]
    assert done == [("old", 0, 1), ("new", 0, 4), ("new", 1, 1), ("o1", 0, 1)]
    of_run = rows.episodes_done(run=RUN, store_uri=uri)
    assert [(r["instance_uid"], r["phase"]) for r in of_run] == [
        ("old", 0),
        ("new", 0),
        ("new", 1),
    ]


FILTERS_OF_THE_OTHER_TYPE = [  # (a reader, its filters, the rows it gives)
    (rows.muscle_actions, {"worker": "1"}, 12),
    (rows.muscle_actions, {"worker": " +1 ", "phase": 0}, 12),
    (rows.world_states, {"episode": ["1", 0]}, 15),
    (rows.muscle_actions, {"episode": ["x", "1.0", str(2**64)]}, 0),
    (rows.statistics, {"worker": "x"}, 0),
    (rows.muscle_actions, {"agent": 7}, 0),
    (rows.muscle_actions, {"agent": ["attacker", 7]}, 15),
    (rows.world_states, {"environment": 1, "mode": 0}, 0),
    (rows.plugin_records, {"key": 1, "source": 2}, 0),
]


def test_a_filter_of_the_other_type_reads_alike_from_sqlite_and_postgresql(
    tmp_path: Path, pg_uri: str
) -> None:
    """A number for a text column (``agent=7``) or a text for a number column
    (``worker="1"``): SQLite converts it, PostgreSQL failed the read (``StoreError: ...
    cannot read: operator does not exist: integer = character varying``). Both now take it as
    SQLite does: a text that is no integer matches no row."""
    stores = [write_store(pg_uri), write_store(f"sqlite:///{tmp_path}/palaestra.db")]

    for uri in stores:
        for reader, filters, expected in FILTERS_OF_THE_OTHER_TYPE:
            assert len(reader(RUN, **filters, store_uri=uri)) == expected, (uri, filters)
        assert rows.runs(experiment=1, store_uri=uri) == []
        assert [r["instance_uid"] for r in rows.runs(run=RUN, store_uri=uri)] == ["old", "new"]


def test_sqlite_and_postgresql_delete_the_same(tmp_path: Path, pg_uri: str) -> None:
    sqlite_uri = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    write_store(pg_uri)

    for uri in (sqlite_uri, pg_uri):
        assert rows.delete_run(RUN, store_uri=uri)["muscle_actions"] == 36
        assert rows.delete_run("run-q2", store_uri=uri, force=True)["experiments"] == 1
    for name, call in CALLS[:2]:
        assert_frame_equal(call(sqlite_uri), call(pg_uri), obj=name)
    assert query.runs(store_uri=pg_uri)["run_uid"].tolist() == ["run-other"]
    assert len(query.muscle_actions("run-other", store_uri=pg_uri)) == 6


# --- one transaction, one snapshot of the store ----------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_reads_of_one_transaction_see_one_snapshot_of_the_store(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Another connection commits between two reads of one :func:`rows.transaction`: the
    second read does not see it. On SQLite each SELECT read the store as it was then (the
    driver began no transaction before a SELECT), on PostgreSQL each statement (READ
    COMMITTED): ``experiment-resume``'s plan could mix the store before and after a commit."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    uri = write_store(uri if backend == "sqlite" else request.getfixturevalue("pg_uri"))
    other = make_engine(uri)
    runs = select(t.experiment_runs.c.uid).order_by(t.experiment_runs.c.id)
    try:
        with rows.transaction(uri) as connection:
            before = connection.scalars(runs).all()
            with other.begin() as committing:
                committing.execute(
                    update(t.experiment_runs)
                    .where(t.experiment_runs.c.uid == "run-other")
                    .values(uid="run-renamed")
                )
            after = connection.scalars(runs).all()
    finally:
        other.dispose()
    assert "run-other" in before
    assert after == before
    with rows.transaction(uri) as connection:  # (committed: a transaction begun after sees it)
        assert "run-renamed" in connection.scalars(runs).all()
