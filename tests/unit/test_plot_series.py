"""The pure functions behind ``palaestra plot``: series from episode rows, smoothing, the mean
and spread over runs, and a missing matplotlib exiting 2 with its pip line."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import sys
from pathlib import Path

import pytest

from palaestra.cli.main import cli
from palaestra.report.bands import aggregate, grouped_bands, is_seed_sweep, sweep_groups
from palaestra.report.series import (
    EpisodeRecord,
    Series,
    auto_window,
    is_discrete,
    numeric_keys,
    reward_series,
    smooth,
    smoothed,
    statistic_series,
    time_order,
)
from tests.conftest import cli_runner


def record(
    phase: int, worker: int, episode: int, steps: int, reward: float | None, agent: str = "a"
) -> EpisodeRecord:
    return EpisodeRecord(
        phase=phase,
        phase_name=f"p{phase}",
        mode="train",
        agent=agent,
        worker=worker,
        episode=episode,
        steps=steps,
        reward=reward,
    )


RECORDS = [
    record(0, 0, 0, 3, 1.0),
    record(0, 1, 0, 2, 2.0),
    record(0, 0, 0, 4, 5.0, agent="b"),
    record(0, 0, 1, 5, None),
    record(1, 0, 0, 1, 7.5),
]


def test_reward_series_per_agent_with_cumulative_steps_and_phase_starts() -> None:
    a, b = reward_series(RECORDS, "r")

    assert (a.agent, a.metric, a.run) == ("a", "reward", "r")
    assert a.episodes == (0, 1, 2, 3)
    assert a.steps == (3, 5, 10, 11)
    assert a.values[:2] == (1.0, 2.0) and math.isnan(a.values[2]) and a.values[3] == 7.5
    assert a.phases == ((0, "p0"), (3, "p1"))
    assert (b.episodes, b.steps, b.values, b.phases) == ((0,), (4,), (5.0,), ((0, "p0"),))


def test_statistic_series_mean_per_episode_at_the_episodes_place() -> None:
    def row(agent: str, phase: int, worker: int, episode: int, value: object) -> dict[str, object]:
        return {
            "agent": agent,
            "phase": phase,
            "worker": worker,
            "episode": episode,
            "statistics": {"loss": value},
        }

    rows = [
        row("a", 0, 0, 0, 1.0),
        row("a", 0, 0, 0, 3),
        row("a", 0, 0, 0, "text"),  # not a number: left out
        row("a", 0, 0, 0, True),  # a bool is no number either
        row("a", 1, 0, 0, 4.0),
        row("a", 0, 0, -1, 100.0),  # outside any episode (a Brain storing): left out
        row("b", 0, 0, 0, 9.0),
    ]

    a, b = statistic_series(RECORDS, rows, "loss", "r")

    assert (a.episodes, a.steps, a.values) == ((0, 3), (3, 11), (2.0, 4.0))
    assert (b.episodes, b.values) == ((0,), (9.0,))
    assert numeric_keys(rows) == ["loss"]
    assert numeric_keys([{"statistics": {"s": "x", "v": [1]}}]) == []


def test_time_order_is_by_end_time_within_a_phase_else_by_episode_then_worker() -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def ended(phase: int, worker: int, episode: int, seconds: float | None) -> EpisodeRecord:
        when = None if seconds is None else at + dt.timedelta(seconds=seconds)
        return dataclasses.replace(record(phase, worker, episode, 1, 0.0), ended_at=when)

    timed = [ended(0, 0, 0, 5.0), ended(0, 1, 0, 1.0), ended(0, 1, 1, 2.0), ended(0, 0, 1, 9.0)]
    untimed = [ended(1, 1, 0, None), ended(1, 0, 1, 3.0), ended(1, 0, 0, 4.0)]

    ordered = time_order([*untimed, *reversed(timed)])

    assert [(r.phase, r.worker, r.episode) for r in ordered] == [
        (0, 1, 0),
        (0, 1, 1),
        (0, 0, 0),
        (0, 0, 1),
        (1, 0, 0),  # a phase with an episode of unknown end: episode, then worker
        (1, 1, 0),
        (1, 0, 1),
    ]


def test_smooth_is_a_trailing_mean_skipping_nan() -> None:
    assert smooth([1.0, 3.0, 5.0, 7.0], 2) == (1.0, 2.0, 4.0, 6.0)
    assert smooth([1.0, math.nan, 5.0], 3) == (1.0, 1.0, 3.0)
    assert smooth([2.0, 4.0], 1) == (2.0, 4.0)
    with pytest.raises(ValueError, match="at least 1"):
        smooth([1.0], 0)


def test_smoothing_starts_afresh_in_each_phase() -> None:
    series = Series(
        run="r",
        agent="a",
        metric="reward",
        episodes=(0, 1, 2, 3),
        steps=(1, 2, 3, 4),
        values=(2.0, 4.0, 10.0, 20.0),
        phases=((0, "train"), (2, "test")),
    )

    assert smoothed(series, 5).values == (2.0, 3.0, 10.0, 15.0)


def _long(values: list[float], test_from: int) -> Series:
    n = len(values)
    return Series(
        run="r",
        agent="a",
        metric="reward",
        episodes=tuple(range(n)),
        steps=tuple(range(1, n + 1)),
        values=tuple(values),
        phases=((0, "train"), (test_from, "test")),
    )


def test_a_drawn_line_starts_where_its_phase_window_is_full() -> None:
    """No spike at a phase's start (a mean of one episode), and a short phase smoothed over a
    tenth of its episodes rather than a window as long as itself."""
    series = _long([float(i % 2) for i in range(300)], test_from=200)
    drawn = smoothed(series, 20, settled=True).values
    assert all(math.isnan(v) for v in drawn[:19]) and drawn[19] == 0.5
    assert all(math.isnan(v) for v in drawn[200:209])  # the test phase: window 100 // 10
    assert drawn[209] == 0.5 and not any(math.isnan(v) for v in drawn[209:])


def test_the_default_window_is_about_a_fiftieth_of_the_episodes() -> None:
    assert auto_window([_long([0.0] * 10_000, 9_000), _long([0.0] * 50, 40)]) == 200
    assert auto_window([_long([0.0] * 99, 90)]) == 1  # too few to smooth
    assert auto_window([]) == 1


def test_wins_draws_and_losses_are_discrete() -> None:
    assert is_discrete(_long([1.0, -1.0, 0.0, 1.0, math.nan], 3))
    assert not is_discrete(_long([1.0, 2.0, 3.5, 4.0], 3))


def test_aggregate_aligns_runs_by_episode_and_skips_nan() -> None:
    def series(run: str, values: tuple[float, ...], agent: str = "a") -> Series:
        n = len(values)
        return Series(
            run=run,
            agent=agent,
            metric="reward",
            episodes=tuple(range(n)),
            steps=tuple(10 * (i + 1) for i in range(n)),
            values=values,
        )

    band, other = aggregate(
        [series("x", (1.0, 4.0, 6.0)), series("y", (3.0, math.nan)), series("x", (0.0,), "b")]
    )

    assert band.agent == "a" and band.runs == ("x", "y")
    assert band.episodes == (0, 1, 2)
    assert band.mean == (2.0, 4.0, 6.0)
    assert (band.low, band.high) == ((1.0, 4.0, 6.0), (3.0, 4.0, 6.0))
    assert band.std == (1.0, 0.0, 0.0)
    assert band.count == (2, 1, 1)
    assert band.steps == (10.0, 20.0, 30.0)
    assert other.agent == "b" and other.mean == (0.0,)


@pytest.mark.parametrize(
    ("module", "args", "extra"),
    [
        ("matplotlib", ["plot", "some-run", "-o", "x.png"], "plot"),
        ("tensorboard", ["export", "tensorboard", "some-run", "-o", "tb"], "tensorboard"),
        ("mlflow", ["export", "mlflow", "some-run", "--tracking-uri", "sqlite:///m.db"], "mlflow"),
    ],
)
def test_a_missing_extra_exits_2_with_its_pip_line(
    monkeypatch: pytest.MonkeyPatch, module: str, args: list[str], extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ModuleNotFoundError

    result = cli_runner().invoke(cli, args, prog_name="palaestra")

    assert result.exit_code == 2, result.output
    assert f"pip install 'palaestra[{extra}]'" in result.stderr
    assert f"needs {module}, which is not installed" in result.stderr


def test_runs_differing_only_by_seed_group_together() -> None:
    lr = "schedule.0.train.agents.0.brain.params.lr"
    overrides = {
        "s1": {"seed": 1, lr: 0.1},
        "s2": {"seed": 2, lr: 0.1},
        "t1": {"seed": 1, lr: 0.01},
        "plain": None,
    }

    assert sweep_groups(overrides) == [
        ("lr=0.1", ["s1", "s2"]),
        ("lr=0.01", ["t1"]),
        ("", ["plain"]),
    ]
    assert not is_seed_sweep(overrides)  # "plain" set no seed
    del overrides["plain"]
    assert is_seed_sweep(overrides)
    assert not is_seed_sweep({"s1": {"seed": 1}, "t1": {"seed": 1, lr: 0.01}})  # no pair
    assert not is_seed_sweep({})


def test_a_group_is_labelled_with_the_tails_that_tell_its_paths_apart() -> None:
    agents = "schedule.0.train.agents"
    first, second = f"{agents}.0.brain.params.lr", f"{agents}.1.brain.params.lr"
    layers = f"{agents}.0.brain.params.layers.0"
    overrides = {"a": {"seed": 1, first: 0.1, second: 0.2, layers: 64}}

    label = "layers.0=64, 0.brain.params.lr=0.1, 1.brain.params.lr=0.2"  # (in the paths' order)
    assert sweep_groups(overrides) == [(label, ["a"])]


def test_grouped_bands_are_labelled_with_their_group() -> None:
    def series(run: str, value: float) -> Series:
        return Series(
            run=run, agent="a", metric="reward", episodes=(0,), steps=(1,), values=(value,)
        )

    overrides = {"s1": {"seed": 1, "x.lr": 1}, "s2": {"seed": 2, "x.lr": 1}, "t": {"seed": 1}}

    first, second = grouped_bands(
        [series("s1", 1.0), series("s2", 3.0), series("t", 7.0)], overrides
    )

    assert (first.label, first.runs, first.mean) == ("a (lr=1)", ("s1", "s2"), (2.0,))
    assert (second.label, second.runs, second.mean) == ("a", ("t",), (7.0,))


@pytest.mark.parametrize("agent", ["$x^2$ agent", "$a^$ cost"])
def test_names_with_dollar_signs_are_drawn_as_they_are(tmp_path: Path, agent: str) -> None:
    """matplotlib read ``$...$`` in a name as math: ``$x^2$`` drew as x², and ``$a^$`` (no
    math) failed the plot, blaming the image file."""
    pytest.importorskip("matplotlib")
    from matplotlib import rc_context

    from palaestra.report.plot import draw

    one = Series(
        run="r$1$",
        agent=agent,
        metric="reward",
        episodes=(0, 1),
        steps=(1, 2),
        values=(1.0, 2.0),
        phases=((0, "$p$"),),
    )
    image = tmp_path / "curve.svg"
    with rc_context({"svg.fonttype": "none"}):  # the texts as text, not as paths
        draw(image, series=[one], title="$t$")

    text = image.read_text()
    assert f"r$1$: {agent}" in text and ">$t$<" in text
