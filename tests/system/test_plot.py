"""``palaestra plot`` on real runs: the image it writes, the series it draws equal to the
store's rows, and bad input exiting 2 naming what is wrong."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.report.bands import aggregate
from palaestra.report.series import load_series
from palaestra.report.trend import WIDTH, reward_trend, sparkline
from tests.conftest import Workspace, wait_until_gone
from tests.system.curve_runs import (
    AGENTS,
    invoke,
    run_curves,
    shared_curves,
    store_episode_rewards,
    store_episodes,
    store_statistic,
)

pytestmark = pytest.mark.timeout(120)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """A store with two runs of the curve run file, differing only by seed."""
    workspace = shared_curves(tmp_path_factory)
    yield workspace
    assert not wait_until_gone(workspace.sessions)


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header; fails unless the file is a PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize(
    "args",
    [
        ["curve-a", "--smooth", "3"],
        ["curve-a", "curve-b", "--aggregate", "--band", "std", "--x", "steps"],
        ["curve-a", "curve-b", "--metric", "explore", "--phase", "train"],
    ],
    ids=["one-run-smoothed", "aggregate-by-steps", "statistic-two-runs"],
)
def test_plot_writes_a_png(curves: Workspace, args: list[str]) -> None:
    out = curves.path / "curve.png"
    out.unlink(missing_ok=True)

    result = invoke(curves, "plot", *args, "-o", str(out))

    assert result.exit_code == 0, result.stderr
    assert png_size(out) == (900, 500)  # 9 x 5 inches at 100 dpi
    assert out.stat().st_size > 15_000  # axes, lines and legend, not an empty canvas
    assert f"Wrote {out}" in result.stdout


def test_runs_of_a_sweep_over_seeds_are_drawn_as_a_mean_and_a_band(
    curves: Workspace, tmp_path: Path
) -> None:
    sweep = Workspace(tmp_path)
    shutil.copy(curves.store, sweep.store)
    with sqlite3.connect(sweep.store) as conn:  # what a sweep records (helper "sweeps")
        for uid, seed in (("curve-a", 3), ("curve-b", 4)):
            overrides = json.dumps({"seed": seed})
            conn.execute(
                "update experiment_runs set overrides = ? where uid = ?", (overrides, uid)
            )
    out = tmp_path / "sweep.png"

    swept = invoke(sweep, "plot", "curve-a", "curve-b", "-o", str(out))
    apart = invoke(sweep, "plot", "curve-a", "curve-b", "--no-aggregate", "-o", str(out))

    assert swept.exit_code == 0, swept.stderr
    assert "2 means with a minmax band, of 2 runs" in swept.stdout
    assert png_size(out) == (900, 500)
    assert "(4 lines)" in apart.stdout


def test_the_command_line_plots_against_steps(curves: Workspace) -> None:
    out = curves.path / "steps.png"

    result = curves.run("plot", "curve-a", "--x", "steps", "--agent", "learner", "-o", str(out))

    assert result.returncode == 0, result.stderr
    assert png_size(out) == (900, 500)
    assert result.stdout == f"Wrote {out} (1 line).\n"


def test_an_image_named_without_a_suffix_is_a_png_and_said_so(curves: Workspace) -> None:
    """``-o curve``: matplotlib wrote ``curve.png`` while the command said "Wrote curve"; the
    image is now written whole or not at all, under the name it has."""
    out = curves.path / "curve"

    result = curves.run("plot", "curve-a", "--agent", "learner", "-o", str(out))

    assert result.returncode == 0, result.stderr
    assert png_size(out.with_name("curve.png")) == (900, 500)
    assert result.stdout == f"Wrote {out}.png (1 line).\n"
    assert sorted(p.name for p in curves.path.glob("*curve.*")) == ["curve.png"]


def test_reward_series_are_the_store_episodes_in_time_order(curves: Workspace) -> None:
    series = load_series("curve-a", store_uri=curves.store_uri)

    assert [one.agent for one in series] == list(AGENTS)
    for one in series:
        rows = store_episodes(curves.store, "curve-a", one.agent)
        assert one.values == tuple(row[5] for row in rows)
        assert one.steps == tuple(itertools.accumulate(row[4] for row in rows))
        assert one.episodes == tuple(range(len(rows)))
        first = {name: index for index, (_, name, *_) in reversed(list(enumerate(rows)))}
        assert one.phases == tuple(sorted((index, name) for name, index in first.items()))
        assert one.label == f"curve-a: {one.agent}"


def test_a_phase_that_records_only_episodes_has_its_curve(workspace: Workspace) -> None:
    run_curves(workspace, "curve-e", seed=3, record="episodes")

    (learner, _) = load_series("curve-e", store_uri=workspace.store_uri)

    # no muscle_actions kept (the test phase takes the train phase's record setting)
    assert store_episodes(workspace.store, "curve-e", "learner") == []

    rows = store_episode_rewards(workspace.store, "curve-e", "learner")
    assert learner.values == tuple(row[1] for row in rows)
    assert learner.steps == tuple(itertools.accumulate(row[2] for row in rows))
    assert learner.phases == ((0, "train"), (10, "test"))


def test_a_phase_alone(curves: Workspace) -> None:
    (series, _) = load_series("curve-a", phase="test", store_uri=curves.store_uri)

    rows = [row for row in store_episodes(curves.store, "curve-a", "learner") if row[1] == "test"]
    assert series.values == tuple(row[5] for row in rows)
    assert series.phases == ((0, "test"),)


def test_a_statistic_is_its_mean_per_episode_at_the_episodes_place(curves: Workspace) -> None:
    series = load_series("curve-a", metric="explore", store_uri=curves.store_uri)

    assert [one.agent for one in series] == ["learner"]  # the watcher records no statistics
    (one,) = series
    rows = store_episodes(curves.store, "curve-a", "learner")
    values = store_statistic(curves.store, "curve-a", "learner", "explore")
    steps = list(itertools.accumulate(row[4] for row in rows))
    expected = [
        (index, steps[index], sum(found) / len(found))
        for index, (phase, _, worker, episode, _, _) in enumerate(rows)
        if (found := values.get((phase, worker, episode)))
    ]
    assert len(expected) == len(rows)  # the muscle records at every step
    assert list(zip(one.episodes, one.steps, one.values, strict=True)) == expected


def test_aggregate_is_the_mean_and_spread_over_the_runs(curves: Workspace) -> None:
    series = [
        one
        for run in ("curve-a", "curve-b")
        for one in load_series(run, agent="learner", store_uri=curves.store_uri)
    ]

    (band,) = aggregate(series)

    a = store_episodes(curves.store, "curve-a", "learner")
    b = store_episodes(curves.store, "curve-b", "learner")
    assert len(a) == len(b)
    assert band.runs == ("curve-a", "curve-b")
    assert band.mean == tuple((x[5] + y[5]) / 2 for x, y in zip(a, b, strict=True))
    assert band.low == tuple(min(x[5], y[5]) for x, y in zip(a, b, strict=True))
    assert band.high == tuple(max(x[5], y[5]) for x, y in zip(a, b, strict=True))
    assert band.std == pytest.approx([abs(x[5] - y[5]) / 2 for x, y in zip(a, b, strict=True)])
    assert band.count == (2,) * len(a)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["curve-x"], "no run 'curve-x'"),
        (["curve-a", "--agent", "lerner"], "no agent 'lerner'; its agents: learner, watcher"),
        (["curve-a", "--phase", "tset"], "no phase 'tset'; its phases: 0 (train), 1 (test)"),
        (["curve-a", "--metric", "explroe"], "no numeric statistic 'explroe'"),
        (["curve-a", "--metric", "note"], "no numeric statistic 'note'"),
    ],
    ids=["run", "agent", "phase", "metric", "metric-not-a-number"],
)
def test_bad_input_exits_2_naming_it(curves: Workspace, args: list[str], named: str) -> None:
    out = curves.path / "bad.png"

    result = invoke(curves, "plot", *args, "-o", str(out))

    assert result.exit_code == 2, result.stderr
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_experiment_show_prints_each_agents_reward_trend(curves: Workspace) -> None:
    trends = reward_trend("curve-a", width=4, store_uri=curves.store_uri)

    for row in trends:
        rewards = [
            episode[5]
            for episode in store_episodes(curves.store, "curve-a", row["agent"])
            if episode[0] == row["phase"]
        ]
        assert row["episodes"] == len(rewards)
        assert row["sparkline"] == sparkline(rewards, 4)
    assert [(row["phase_name"], row["agent"]) for row in trends] == [
        ("train", "learner"),
        ("train", "watcher"),
        ("test", "learner"),
        ("test", "watcher"),
    ]

    result = invoke(curves, "experiment-show", "curve-a")

    assert result.exit_code == 0, result.stderr
    table = result.stdout.split("Episode rewards", 1)[1].splitlines()[3:]
    shown = reward_trend("curve-a", width=WIDTH, store_uri=curves.store_uri)
    assert [line.split()[-1] for line in table if line] == [row["sparkline"] for row in shown]
    as_json = json.loads(invoke(curves, "experiment-show", "curve-a", "--format", "json").stdout)
    assert [row["sparkline"] for row in as_json["trends"]] == [row["sparkline"] for row in shown]


@pytest.mark.slow
def test_a_postgresql_store_gives_the_same_series(workspace: Workspace, pg_uri: str) -> None:
    (workspace.path / "palaestra-runtime.yaml").write_text(f"store_uri: {pg_uri}\n")
    run_curves(workspace, "curve-p", seed=3)
    sqlite = Workspace(workspace.path / "sqlite")
    sqlite.path.mkdir()
    run_curves(sqlite, "curve-p", seed=3)

    on_postgres = load_series("curve-p", metric="explore", store_uri=pg_uri)
    on_sqlite = load_series("curve-p", metric="explore", store_uri=sqlite.store_uri)

    # the same seeded episodes; the order of concurrent workers' episodes is the time's
    assert [sorted(one.values) for one in on_postgres] == [sorted(s.values) for s in on_sqlite]
    assert [one.steps[-1] for one in on_postgres] == [one.steps[-1] for one in on_sqlite]
    assert all(all(math.isfinite(t) for t in one.ended) for one in on_postgres)
