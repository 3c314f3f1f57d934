"""Watching a run: live progress while it runs and a summary table at its end.

The executor calls the watcher with every :class:`~palaestra.core.wire.messages.EpisodeEnded` as a
worker's episode ends (in the executor's process, never on the step path of a worker). On a
terminal the watcher draws, per phase, a bar of episodes done of planned (episodes × workers),
steps per second, elapsed time, ETA and each agent's rolling mean episode reward; elsewhere (CI,
pipes) it writes plain lines: a phase's start and end, and about ten lines per phase between.
Both end with a summary table per phase and agent. ``-q`` makes no watcher at all.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from palaestra.cli.formatting import counted, number, seconds

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from palaestra.core.description.specs import RunSpec
    from palaestra.core.wire.messages import EpisodeEnded

WINDOW = 100
"""How many of an agent's newest episodes its rolling mean reward covers."""
PLAIN_LINES = 10
"""About how many progress lines a phase prints when not on a terminal."""
REFRESH_S = 0.1
"""The least time between two redraws of the live display."""


@dataclass
class AgentTally:
    """One agent's episode rewards in one phase: count, sum, extremes and the newest ones."""

    episodes: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def add(self, reward: float) -> None:
        self.episodes += 1
        self.total += reward
        # a NaN reward makes the extremes NaN, as it makes the mean (min and max would keep
        # inf and -inf, or not, by the order of the episodes)
        self.low = reward if math.isnan(reward) or reward < self.low else self.low
        self.high = reward if math.isnan(reward) or reward > self.high else self.high
        self.recent.append(reward)

    @property
    def mean(self) -> float | None:
        return self.total / self.episodes if self.episodes else None

    @property
    def rolling(self) -> float | None:
        """The mean of the newest :data:`WINDOW` episodes."""
        return sum(self.recent) / len(self.recent) if self.recent else None


@dataclass
class PhaseTally:
    """What the episodes of one phase that ended so far add up to."""

    index: int
    name: str
    mode: str
    planned: int
    workers: int  # each game a worker (``envs_per_worker``)
    games: int = 1  # games per worker
    every: int = 0  # ``evaluate_every``: each game's training episodes between rollouts
    done: int = 0  # training episodes
    evaluations: int = 0  # evaluation rollouts (stored in the game's sequence of episodes)
    steps: int = 0
    first_start: float | None = None
    last_end: float | None = None
    agents: dict[str, AgentTally] = field(default_factory=dict)

    def add(self, event: EpisodeEnded) -> None:
        if self.every and (event.episode + 1) % (self.every + 1) == 0:
            self.evaluations += 1
        else:
            self.done += 1
        self.steps += event.steps
        start, end = event.started_at, event.ended_at
        self.first_start = start if self.first_start is None else min(self.first_start, start)
        self.last_end = end if self.last_end is None else max(self.last_end, end)
        for agent, reward in event.rewards.items():
            self.agents.setdefault(agent, AgentTally()).add(reward)

    @property
    def duration(self) -> float | None:
        """From the start of its first episode to the end of its last (None before one ends)."""
        if self.first_start is None or self.last_end is None:
            return None
        return max(self.last_end - self.first_start, 0.0)

    @property
    def steps_per_s(self) -> float | None:
        duration = self.duration
        return self.steps / duration if duration else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far, if the phase runs all its planned episodes."""
        duration = self.duration
        if not self.done or duration is None:
            return None
        return duration / self.done * max(self.planned - self.done, 0)

    @property
    def complete(self) -> bool:
        """All planned episodes ended, and the rollout that follows each ``every`` of a
        game's."""
        due = (
            self.planned // max(self.workers, 1) // self.every * self.workers if self.every else 0
        )
        return self.done >= self.planned and self.evaluations >= due

    @property
    def rollouts(self) -> str:
        """`` (+2 evaluations)`` after the episodes, as ``experiment-show`` says it; empty
        without any."""
        return f" (+{counted(self.evaluations, 'evaluation')})" if self.evaluations else ""

    @property
    def label(self) -> str:
        return f"phase {self.index} '{self.name}' ({self.mode})"

    def rewards(self) -> str:
        """Each agent's rolling mean reward: ``attacker 12.5, defender -3.1``."""
        return ", ".join(
            f"{agent} {number(tally.rolling)}" for agent, tally in sorted(self.agents.items())
        )


class RunTally:
    """The phases of a run, from its spec, and the episodes that ended in each."""

    def __init__(self, run: RunSpec) -> None:
        self.run_uid = run.uid
        self.phases = [
            PhaseTally(
                phase.index,
                phase.name,
                phase.config.mode,
                phase.config.episodes * phase.config.worker * phase.config.envs_per_worker,
                phase.config.worker * phase.config.envs_per_worker,  # each game a worker
                phase.config.envs_per_worker,
                # (palaestra plays no rollouts with several workers)
                phase.config.evaluate_every if phase.config.worker == 1 else 0,
            )
            for phase in run.phases
        ]

    def add(self, event: EpisodeEnded) -> PhaseTally | None:
        """Count ``event`` in its phase; None for a phase the run does not have."""
        if not 0 <= event.phase < len(self.phases):
            return None
        phase = self.phases[event.phase]
        phase.add(event)
        return phase


class Watcher:
    """Counts episodes and shows them; the display itself is up to the subclass."""

    def __init__(self, run: RunSpec) -> None:
        self.tally = RunTally(run)
        self.shown = -1  # the index of the last phase shown to begin
        self.running = False  # it is shown as running

    def __call__(self, event: EpisodeEnded) -> None:
        phase = self.tally.add(event)
        if phase is None:
            return
        self.phase_begins(phase.index)  # (where the executor did not tell it)
        self.episode_ended(phase)
        if phase.complete and phase.index == self.shown:
            self._end_shown()

    def start(self) -> None:
        """The run begins (a phase is shown once it begins: :meth:`phase_begins`)."""

    def phase_begins(self, index: int) -> None:
        """Phase ``index`` begins (the executor starts its processes): the phase shown ends,
        this one is shown. A run refused before it began shows no phase."""
        if not self.shown < index < len(self.tally.phases):
            return
        self._end_shown()
        self.shown, self.running = index, True
        self.phase_started(self.tally.phases[index])

    def close(self) -> None:
        """The run is over (finished, failed or interrupted): end the phase shown, summarise."""
        self._end_shown()
        self.summarise()

    def _end_shown(self) -> None:
        if self.running:
            self.running = False
            self.phase_ended(self.tally.phases[self.shown])

    def phase_started(self, phase: PhaseTally) -> None:
        """Show that ``phase`` starts."""

    def episode_ended(self, phase: PhaseTally) -> None:
        """Show that an episode of ``phase`` ended."""

    def phase_ended(self, phase: PhaseTally) -> None:
        """Show that ``phase`` ended."""

    def summarise(self) -> None:
        """Show the summary of the run."""


class PlainWatcher(Watcher):
    """Plain lines without control characters to ``stream``: for logs, CI and pipes."""

    def __init__(self, run: RunSpec, stream: TextIO) -> None:
        super().__init__(run)
        self.stream = stream
        self._next: dict[int, int] = {}

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def phase_started(self, phase: PhaseTally) -> None:
        per_worker = phase.planned // max(phase.workers, 1)
        self._next[phase.index] = _every(phase.planned)
        shape = f"{per_worker} x {counted(phase.workers, 'worker')}"
        if phase.games > 1:  # (each game plays what a worker plays)
            workers = counted(phase.workers // phase.games, "worker")
            shape = f"{per_worker} x {workers} x {phase.games} games"
        self._line(f"{phase.label} started: {counted(phase.planned, 'episode')} ({shape})")

    def episode_ended(self, phase: PhaseTally) -> None:
        due = self._next.get(phase.index, 1)
        if phase.done < due or phase.done >= phase.planned:  # (the end line says that)
            return
        self._next[phase.index] = phase.done + _every(phase.planned)
        self._line(
            f"{phase.label}: {phase.done}/{phase.planned} episodes, {phase.steps} steps, "
            f"{number(phase.steps_per_s)} steps/s, {seconds(phase.duration)} elapsed, "
            f"ETA {seconds(phase.eta)}; mean reward (last {WINDOW}): {phase.rewards() or '-'}"
        )

    def phase_ended(self, phase: PhaseTally) -> None:
        self._line(
            f"{phase.label} ended: {phase.done}/{phase.planned} episodes{phase.rollouts}, "
            f"{phase.steps} steps "
            f"in {seconds(phase.duration)} ({number(phase.steps_per_s)} steps/s)"
        )

    def summarise(self) -> None:
        plain_summary(self.tally, self.stream)


class LiveWatcher(Watcher):
    """A live display with rich on ``console`` (a terminal's): one bar per phase, redrawn at
    most every :data:`REFRESH_S`.

    No thread redraws it (the executor forks the run's processes; a thread holding the
    console's lock at a fork would stay locked in the child): each episode's end does, and
    the start and end of each phase.
    """

    def __init__(self, run: RunSpec, console: Console) -> None:
        super().__init__(run)
        self.console = console
        self.progress = _progress(console)
        self._tasks: dict[int, TaskID] = {}
        self._drawn = 0.0

    def start(self) -> None:
        self.progress.start()
        super().start()

    def phase_started(self, phase: PhaseTally) -> None:
        self._tasks[phase.index] = self.progress.add_task(
            phase.label, total=phase.planned, rate="", rewards=""
        )
        self._draw(now=True)

    def episode_ended(self, phase: PhaseTally) -> None:
        task = self._tasks.get(phase.index)
        if task is None:
            return
        rate = phase.steps_per_s
        self.progress.update(
            task,
            completed=phase.done,
            rate=f"{rate:,.0f} steps/s" if rate is not None else "",
            rewards=phase.rewards(),
        )
        self._draw()

    def phase_ended(self, phase: PhaseTally) -> None:
        task = self._tasks.get(phase.index)
        if task is not None:
            self.progress.stop_task(task)
        self._draw(now=True)

    def summarise(self) -> None:
        self.progress.stop()
        _print_summary(self.tally, self.console)

    def _draw(self, now: bool = False) -> None:
        moment = time.monotonic()
        if now or moment - self._drawn >= REFRESH_S:
            self._drawn = moment
            self.progress.refresh()


def _every(planned: int) -> int:
    """Print every this many episodes: about :data:`PLAIN_LINES` lines per phase."""
    return max(1, math.ceil(planned / PLAIN_LINES))


def _progress(console: Console) -> Progress:
    """A rich Progress drawing two lines per phase: the bar with its figures, then the agents'
    rolling mean rewards (cut to the terminal's width, never wrapped)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Column
    from rich.text import Text

    class PhaseProgress(Progress):
        def get_renderables(self) -> Iterator[Any]:
            for task in self.tasks:
                yield self.make_tasks_table([task])
                if task.fields.get("rewards"):
                    line = f"  mean reward (last {WINDOW}): {task.fields['rewards']}"
                    yield Text(line, no_wrap=True, overflow="ellipsis")

    def fixed() -> Column:
        return Column(no_wrap=True)

    return PhaseProgress(
        TextColumn(
            "{task.description}",
            markup=False,  # (a phase's name as it is)
            table_column=Column(no_wrap=True, overflow="ellipsis"),
        ),
        BarColumn(bar_width=16),
        MofNCompleteColumn(table_column=fixed()),
        TextColumn("{task.fields[rate]}", table_column=fixed()),
        TimeElapsedColumn(table_column=fixed()),
        TextColumn("ETA", table_column=fixed()),
        TimeRemainingColumn(table_column=fixed()),
        console=console,
        auto_refresh=False,
        redirect_stdout=False,
        redirect_stderr=False,
    )


SUMMARY_COLUMNS = ("phase", "agent", "episodes", "steps", "mean", "min", "max", "duration")
"""The summary's columns: the first two left-aligned, the figures right-aligned."""


def summary_rows(tally: RunTally) -> list[tuple[str, ...]]:
    """Per phase and agent: episodes, steps, mean/min/max episode reward and duration."""
    rows: list[tuple[str, ...]] = []
    for phase in tally.phases:
        if not phase.done:
            continue
        common = (f"{phase.done}/{phase.planned}{phase.rollouts}", str(phase.steps))
        for agent, reward in sorted(phase.agents.items()) or [("-", AgentTally())]:
            rows.append(
                (
                    f"{phase.index} {phase.name}",
                    agent,
                    *common,
                    number(reward.mean),
                    number(reward.low if reward.episodes else None),
                    number(reward.high if reward.episodes else None),
                    seconds(phase.duration),
                )
            )
    return rows


def summary_table(tally: RunTally) -> Table:
    """:func:`summary_rows` as a rich table (the live display's); names are shown as they
    are, never read as rich markup."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    for k, name in enumerate(SUMMARY_COLUMNS):
        table.add_column(name, justify="left" if k < 2 else "right", no_wrap=True)
    for row in summary_rows(tally):
        table.add_row(*(Text(cell) for cell in row))
    return table


def plain_summary(tally: RunTally, stream: TextIO) -> None:
    """The summary as plain text, laid out as :func:`summary_table` draws it on a UTF-8
    stream (rich is not imported for it: 30 ms at the end of every run that is not on a
    terminal). Unlike a table, a line is never cut to a width: a long name makes it long."""
    rows = summary_rows(tally)
    if not rows:
        return
    every = [SUMMARY_COLUMNS, *rows]
    widths = [max(_cells(row[k]) for row in every) for k in range(len(SUMMARY_COLUMNS))]

    def line(row: tuple[str, ...]) -> str:
        return " ".join(
            text + " " * (width - _cells(text)) if k < 2 else " " * (width - _cells(text)) + text
            for k, (text, width) in enumerate(zip(row, widths, strict=True))
        )

    encoding = getattr(stream, "encoding", None) or "utf-8"  # (rich's default, for StringIO)
    rule = "\u2500" if encoding.lower().startswith("utf") else "-"
    lines = [_title(tally), line(SUMMARY_COLUMNS)]
    lines.append(rule * (sum(widths) + len(widths) - 1))
    lines += [line(row) for row in rows]
    stream.write("\n".join(lines) + "\n")
    stream.flush()


def _cells(text: str) -> int:
    """The terminal cells ``text`` takes (a wide character, CJK say, two; a combining mark
    none): rich's measure, imported only for a name that is not ASCII."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _title(tally: RunTally) -> str:
    return f"Summary of run '{tally.run_uid}'"


def _print_summary(tally: RunTally, console: Console) -> None:
    if any(phase.done for phase in tally.phases):
        from rich.text import Text

        console.print(Text(_title(tally), style="bold"))
        console.print(summary_table(tally))


def _console(stream: TextIO, *, terminal: bool) -> Console:
    from rich.console import Console

    return Console(
        file=stream,
        force_terminal=terminal,
        no_color=not terminal,
        highlight=False,
        width=None if terminal else 200,
    )


def make_watcher(run: RunSpec, stream: TextIO, *, quiet: bool = False) -> Watcher | None:
    """The watcher for ``stream``: live on a terminal, plain lines elsewhere, none if quiet."""
    if quiet:
        return None
    if stream.isatty():
        return LiveWatcher(run, _console(stream, terminal=True))
    return PlainWatcher(run, stream)


@contextmanager
def watching(run: RunSpec, stream: TextIO, *, quiet: bool = False) -> Iterator[Watcher | None]:
    """Watch ``run`` while the block runs: yields the watcher (None if quiet), the executor's
    ``on_episode`` and (its :meth:`~Watcher.phase_begins`) ``on_phase``; the summary comes when
    the block ends, however it ends."""
    watcher = make_watcher(run, stream, quiet=quiet)
    if watcher is None:
        yield None
        return
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.close()
