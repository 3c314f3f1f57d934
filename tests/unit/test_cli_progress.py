"""Tests of watching a run (palaestra/cli/progress.py), fed with EpisodeEnded events."""

from __future__ import annotations

import io
import re

import msgspec
import pytest

from palaestra.cli.formatting import number, seconds
from palaestra.cli.progress import (
    LiveWatcher,
    PlainWatcher,
    _console,
    _print_summary,
    make_watcher,
    watching,
)
from palaestra.core.description.specs import PhaseConfig, PhaseSpec, RunSpec, SimulationSpec
from palaestra.core.wire.messages import EpisodeEnded

NAN = float("nan")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # everything but tab and newline


def run_spec(*phases: tuple[int, int]) -> RunSpec:
    """A run whose phases have (episodes, workers) each; nothing else is read."""
    return RunSpec(
        uid="watched",
        experiment_uid="exp",
        seed=1,
        version="3.4",
        phases=tuple(
            PhaseSpec(
                index=i,
                name=f"p{i}",
                environments=(),
                agents=(),
                simulation=SimulationSpec(name="palaestra.simulation:Vanilla"),
                config=PhaseConfig(mode="train" if i == 0 else "test", episodes=e, worker=w),
            )
            for i, (e, w) in enumerate(phases)
        ),
    )


def episode(
    phase: int, n: int, *, worker: int = 0, steps: int = 10, t0: float = 1000.0, **rewards: float
) -> EpisodeEnded:
    """Episode ``n`` (from 1) of ``worker``: each takes 1 s from ``t0``."""
    return EpisodeEnded(
        phase=phase,
        worker=worker,
        episode=n,
        started_at=t0 + n - 1,
        ended_at=t0 + n,
        steps=steps,
        rewards=rewards,
    )


def test_a_phase_of_several_games_per_worker_says_so() -> None:
    """``envs_per_worker: 4`` with one worker: the 400 episodes planned are 100 of each game,
    not of four workers the run file does not have."""
    out = io.StringIO()
    run = run_spec((100, 1))
    config = msgspec.structs.replace(run.phases[0].config, envs_per_worker=4)
    phases = (msgspec.structs.replace(run.phases[0], config=config),)
    watcher = PlainWatcher(msgspec.structs.replace(run, phases=phases), out)
    watcher.start()
    watcher.phase_begins(0)

    assert out.getvalue().splitlines()[0] == (
        "phase 0 'p0' (train) started: 400 episodes (100 x 1 worker x 4 games)"
    )


def test_plain_lines_per_phase_and_a_tenth_of_its_episodes() -> None:
    out = io.StringIO()
    watcher = PlainWatcher(run_spec((50, 2), (3, 1)), out)
    watcher.start()
    for n in range(1, 51):
        for worker in (0, 1):
            watcher(episode(0, n, worker=worker, a=float(n), b=-1.0))
    for n in range(1, 4):
        watcher(episode(1, n, t0=2000.0, a=2.0, b=124800.0))
    watcher.close()
    lines = out.getvalue().splitlines()

    assert lines[0] == "phase 0 'p0' (train) started: 100 episodes (50 x 2 workers)"
    progress = [line for line in lines if line.startswith("phase 0 'p0' (train): ")]
    assert len(progress) == 9  # every 10 episodes; the 100th is the end line
    assert progress[0].startswith("phase 0 'p0' (train): 10/100 episodes, 100 steps, ")
    # 50 episodes per worker of 1 s each, 2 workers side by side: 1000 steps in 50 s
    assert lines.index(
        "phase 0 'p0' (train) ended: 100/100 episodes, 1000 steps in 50.0 s (20.00 steps/s)"
    ) < lines.index("phase 1 'p1' (test) started: 3 episodes (3 x 1 worker)")
    assert "phase 1 'p1' (test) ended: 3/3 episodes, 30 steps in 3.0 s (10.00 steps/s)" in lines
    last = progress[-1]
    assert last.startswith("phase 0 'p0' (train): 90/100 episodes")
    assert "ETA 5.0 s" in last  # 45 s for 90 episodes, 10 left
    assert "mean reward (last 100): a 23.00, b -1.00" in last  # 1..45 twice
    text = out.getvalue()
    assert not CONTROL.search(text)
    summary = re.search(r"Summary of run 'watched'\n(.*)", text, re.S)
    assert summary is not None
    rows = [line.split() for line in summary.group(1).splitlines()[2:]]
    assert rows == [
        ["0", "p0", "a", "100/100", "1000", "25.50", "1.00", "50.00", "50.0", "s"],
        ["0", "p0", "b", "100/100", "1000", "-1.00", "-1.00", "-1.00", "50.0", "s"],
        ["1", "p1", "a", "3/3", "30", "2.00", "2.00", "2.00", "3.0", "s"],
        ["1", "p1", "b", "3/3", "30", "124,800", "124,800", "124,800", "3.0", "s"],
    ]


def test_evaluation_rollouts_are_no_episodes_of_the_plan() -> None:
    """``evaluate_every: 2`` and 4 episodes: the worker plays 2 training episodes, a rollout,
    2 more, a rollout (stored numbers 2 and 5). The phase was said to end after 3 training
    episodes and a rollout ("ended: 4/4 episodes") and the summary said ``6/4``, where
    ``experiment-show`` says ``4/4 (+2 evaluations)``: it says so now, too."""
    out = io.StringIO()
    run = run_spec((4, 1))
    config = msgspec.structs.replace(run.phases[0].config, evaluate_every=2)
    phases = (msgspec.structs.replace(run.phases[0], config=config),)
    watcher = PlainWatcher(msgspec.structs.replace(run, phases=phases), out)
    watcher.start()
    for stored in range(6):
        watcher(msgspec.structs.replace(episode(0, stored + 1, a=1.0), episode=stored))
        if stored == 4:
            assert "ended" not in out.getvalue()  # (the last rollout is still to come)
    watcher.close()
    lines = out.getvalue().splitlines()

    assert (
        "phase 0 'p0' (train) ended: 4/4 episodes (+2 evaluations), 60 steps in 6.0 s "
        "(10.00 steps/s)"
    ) in lines
    assert not [line for line in lines if line.startswith("phase 0 'p0' (train): 4/4")]
    summary = out.getvalue().split("Summary of run 'watched'\n", 1)[1]
    assert summary.splitlines()[2].split()[:6] == ["0", "p0", "a", "4/4", "(+2", "evaluations)"]


@pytest.mark.parametrize("rewards", [(NAN, NAN), (NAN, 1.0, 2.0), (1.0, NAN, 2.0)])
def test_a_nan_episode_reward_makes_min_and_max_nan_as_the_mean(
    rewards: tuple[float, ...],
) -> None:
    out = io.StringIO()
    watcher = PlainWatcher(run_spec((len(rewards), 1)), out)
    watcher.start()
    for n, reward in enumerate(rewards, 1):
        watcher(episode(0, n, a=reward))
    watcher.close()

    summary = out.getvalue().split("Summary of run 'watched'\n", 1)[1]
    row = summary.splitlines()[2].split()
    assert row[5:8] == ["nan", "nan", "nan"]  # not inf and -inf, nor 1.00 and 2.00


def test_the_plain_summary_is_laid_out_as_rich_draws_it() -> None:
    """The plain summary is written without rich; it is the text rich's table makes (on a
    UTF-8 stream): wide characters, combining marks, names that look like rich markup (shown
    as they are by both), a phase without agents and a phase without episodes included."""
    out = io.StringIO()
    watcher = PlainWatcher(run_spec((2, 1), (1, 1), (4, 2), (1, 1)), out)
    watcher.start()
    names = ("agent_名前", "b", "e\u0301galite\u0301", "\u1100\u1161x", "def[v2]", "t:smile:")
    watcher(episode(0, 1, **dict.fromkeys(names, 1.5)))
    watcher(episode(0, 2, **dict.fromkeys(names, 123456.0)))
    watcher(episode(1, 1))  # no agent's reward: a row with "-"
    for n in range(1, 3):
        for worker in (0, 1):
            watcher(episode(2, n, worker=worker, steps=1000, a=float(n)))
    watcher.close()  # phase 3 had no episode: no row
    plain = out.getvalue()
    drawn = io.StringIO()
    _print_summary(watcher.tally, _console(drawn, terminal=False))
    assert plain[plain.index("Summary of run") :] == drawn.getvalue()
    assert "2 p2" in plain and "3 p3" not in plain
    assert all(name in plain for name in names)


def test_plain_lines_of_a_phase_that_ends_early_and_of_an_interrupted_run() -> None:
    out = io.StringIO()
    watcher = PlainWatcher(run_spec((10, 1), (10, 1), (10, 1)), out)
    watcher.start()
    watcher(episode(0, 1, a=1.0))
    watcher(episode(1, 1, a=1.0))  # phase 0 stopped after one episode (a termination condition)
    watcher(episode(1, 2, a=3.0))
    watcher.close()  # Ctrl-C during phase 1: phase 2 never started
    lines = out.getvalue().splitlines()
    ends = [line for line in lines if " ended: " in line]
    assert ends == [
        "phase 0 'p0' (train) ended: 1/10 episodes, 10 steps in 1.0 s (10.00 steps/s)",
        "phase 1 'p1' (test) ended: 2/10 episodes, 20 steps in 2.0 s (10.00 steps/s)",
    ]
    assert not any(line.startswith("phase 2") for line in lines)
    assert "1 p1 a 2/10 20 2.00 1.00 3.00 2.0 s".split() in [line.split() for line in lines]


def test_a_run_without_episodes_prints_no_summary() -> None:
    out = io.StringIO()
    with watching(run_spec((2, 1)), out) as watcher:
        assert watcher is not None
        watcher.phase_begins(0)
    assert out.getvalue().splitlines() == [
        "phase 0 'p0' (train) started: 2 episodes (2 x 1 worker)",
        "phase 0 'p0' (train) ended: 0/2 episodes, 0 steps in - (- steps/s)",
    ]


def test_a_run_refused_before_it_began_shows_no_phase() -> None:
    """An unusable store (a PostgreSQL server down): "phase 0 ... started" and "ended: 0/1
    episodes" came before the error, of a phase that never began."""
    out = io.StringIO()
    with watching(run_spec((2, 1)), out):
        pass
    assert out.getvalue() == ""


def test_phases_are_shown_as_they_begin_also_a_resumed_run_s() -> None:
    """A phase is shown when the executor begins it, not when the one before it had its last
    episode; a resumed run (at phase 2) shows none of the phases before; a late episode of an
    earlier phase counts there without showing it again."""
    out = io.StringIO()
    with watching(run_spec((1, 1), (1, 1), (2, 1), (1, 1)), out) as watcher:
        assert watcher is not None
        watcher.phase_begins(2)
        watcher(episode(2, 1, a=1.0))
        watcher(episode(1, 1, a=1.0))  # (late: of a phase that ended)
        watcher(episode(2, 2, a=1.0))
        assert out.getvalue().splitlines()[-1].startswith("phase 2 'p2' (test) ended: 2/2")
        watcher.phase_begins(3)
    lines = [line.split(":")[0] for line in out.getvalue().splitlines()]
    assert [line for line in lines if line.endswith(("started", "ended"))] == [
        "phase 2 'p2' (test) started",
        "phase 2 'p2' (test) ended",
        "phase 3 'p3' (test) started",
        "phase 3 'p3' (test) ended",
    ]


def test_quiet_watches_nothing() -> None:
    out = io.StringIO()
    with watching(run_spec((2, 1)), out, quiet=True) as watcher:
        assert watcher is None
    assert out.getvalue() == ""


def test_events_of_unknown_phases_are_ignored() -> None:
    out = io.StringIO()
    with watching(run_spec((2, 1)), out) as watcher:
        assert watcher is not None
        watcher.phase_begins(0)
        watcher(episode(5, 1, a=1.0))
    assert "0/2 episodes" in out.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_display_is_live_and_ends_with_the_summary() -> None:
    out = Terminal()
    watcher = make_watcher(run_spec((4, 1), (2, 1)), out)
    assert isinstance(watcher, LiveWatcher)
    watcher.console = _console(out, terminal=True)
    watcher.console.width = 160
    watcher.start()
    for n in range(1, 5):
        watcher(episode(0, n, steps=500, attacker=float(n), defender=124800.0))
    watcher(episode(1, 1, attacker=0.5, **{"def[v2]": 1.0}))  # (not rich markup)
    watcher.close()
    text = out.getvalue()
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # what the terminal shows

    assert "\x1b[" in text  # drawn with control sequences
    assert "4/4" in shown and "1/2" in shown
    assert "500 steps/s" in shown
    # the rolling mean of the four, on a line of its own below the bar
    assert "\n  mean reward (last 100): attacker 2.50, defender 124,800" in shown
    assert "ETA" in shown
    assert "Summary of run 'watched'" in shown
    assert re.search(r"0 p0\s+attacker\s+4/4\s+2000\s+2.50\s+1.00\s+4.00\s+4.0 s", shown)
    assert re.search(r"1 p1\s+def\[v2\]\s+1/2", shown)


def test_off_a_terminal_the_lines_are_plain() -> None:
    assert isinstance(make_watcher(run_spec((1, 1)), io.StringIO()), PlainWatcher)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "-"),
        (0.0, "0"),
        (124800.0, "124,800"),
        (-1248000.4, "-1,248,000"),
        (12.345, "12.35"),
        (0.01234, "0.0123"),
        (1.2e-7, "1.20e-07"),
        (3e16, "3.00e+16"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
    ],
)
def test_numbers_for_people(value: float | None, shown: str) -> None:
    assert number(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"), [(None, "-"), (4.24, "4.2 s"), (185, "3m 05s"), (7620, "2h 07m")]
)
def test_durations_for_people(value: float | None, shown: str) -> None:
    assert seconds(value) == shown
