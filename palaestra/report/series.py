"""Episode series of runs: each agent's episode rewards or statistics, workers combined in time
order, with smoothing and the mean and spread over runs that differ only by seed.

The one place that decides the time order of the workers' episodes is :func:`ordered_episodes`;
combining runs is :mod:`palaestra.report.bands`'s.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from palaestra.core.errors import InvalidInputError, did_you_mean
from palaestra.store import rows
from palaestra.store.rows import Match, Row, StoreURI

REWARD = "reward"
"""The metric name of episode rewards; any other metric is a statistic key."""
EVALUATION = "evaluation"
"""The metric name of the rewards of evaluation rollouts (a :func:`reward_series` of its
own)."""


@dataclass(frozen=True, kw_only=True)
class EpisodeRecord:
    """One episode of one agent in one rollout worker, with its steps and summed reward."""

    phase: int
    phase_name: str
    mode: str
    agent: str
    worker: int
    episode: int
    steps: int
    reward: float | None
    ended_at: dt.datetime | None = None
    """When the episode ended (or, if it did not, started); None if the store does not say."""
    evaluation: bool = False
    """Whether it is an evaluation rollout (``evaluate_every``), not a training episode."""

    @property
    def key(self) -> tuple[int, int, int]:
        """Phase, worker and episode: what a statistics row names its episode by."""
        return (self.phase, self.worker, self.episode)


@dataclass(frozen=True, kw_only=True)
class Series:
    """One line of a learning curve: a metric of one agent of one run, per episode.

    Attributes:
        run: The run's uid.
        agent: The agent's name.
        metric: ``"reward"`` or a statistic key.
        episodes: Each point's index among the agent's episodes in time order (from 0).
        steps: The steps (the world's; the agent's in stores without episode times) from the
            first episode to the end of each point's episode.
        values: Each point's value (NaN for an episode without a reward).
        phases: ``(episode index, phase name)`` where each phase the series crosses begins.
    """

    run: str
    agent: str
    metric: str
    episodes: tuple[int, ...]
    steps: tuple[int, ...]
    values: tuple[float, ...]
    phases: tuple[tuple[int, str], ...] = ()
    ended: tuple[float, ...] = ()
    """When each point's episode ended (POSIX seconds; NaN where unknown), if known at all."""

    @property
    def label(self) -> str:
        """``run: agent`` (``run: agent (evaluations)`` for its evaluation rollouts)."""
        if self.metric == EVALUATION:
            return f"{self.run}: {self.agent} (evaluations)"
        return f"{self.run}: {self.agent}"

    @property
    def tag(self) -> str:
        """The exporters' name of it: ``reward/<agent>``, ``evaluation/<agent>`` or
        ``statistic/<key>/<agent>``."""
        if self.metric in (REWARD, EVALUATION):
            return f"{self.metric}/{self.agent}"
        return f"statistic/{self.metric}/{self.agent}"

    def points(self) -> Iterator[tuple[int, int, float, float]]:
        """Each point's episode index, steps, value and end (:attr:`ended`, NaN where unknown)."""
        ended = self.ended or (math.nan,) * len(self.values)
        return zip(self.episodes, self.steps, self.values, ended, strict=True)


# --- reading the store -----------------------------------------------------------------------


def ordered_episodes(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> list[EpisodeRecord]:
    """The episodes of a run's agents, the workers of a phase combined in time order.

    Within a phase, episodes are ordered by the time they ended (the store's ``episodes``
    table), and their ``steps`` are the world's steps. A phase without those times (a store
    before revision 0005) is ordered by episode number, then worker, since its workers ran side
    by side: the k-th episodes of all workers come before the (k+1)-th of any; its ``steps``
    are the agent's.

    Raises:
        UnknownRunError: No such run (or instance).
    """
    found = rows.episode_rewards(
        run, phase=phase, agent=agent, store_uri=store_uri, instance=instance
    )
    times = {
        (row["phase"], row["worker"], row["episode"]): row
        for row in rows.episodes(run, phase=phase, store_uri=store_uri, instance=instance)
    }
    records = [
        _record(row, times.get((row["phase"], row["worker"], row["episode"]))) for row in found
    ]
    return time_order(records)


def time_order(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """``records`` by phase, then by the time they ended; a phase where one lacks that time is
    ordered by episode number, then worker (see :func:`ordered_episodes`)."""
    records = list(records)
    untimed = {record.phase for record in records if record.ended_at is None}
    return sorted(records, key=lambda record: _time_key(record, record.phase in untimed))


def _time_key(record: EpisodeRecord, untimed: bool) -> tuple[int, int, float, int, int]:
    if untimed or record.ended_at is None:
        return (record.phase, 1, float(record.episode), record.worker, 0)
    return (record.phase, 0, record.ended_at.timestamp(), record.worker, record.episode)


def _record(row: Row, timed: Row | None) -> EpisodeRecord:
    reward = row["reward"]
    ended = None if timed is None else (timed["ended_at"] or timed["started_at"])
    return EpisodeRecord(
        phase=int(row["phase"]),
        phase_name=str(row["phase_name"]),
        mode=str(row["mode"]),
        agent=str(row["agent"]),
        worker=int(row["worker"]),
        episode=int(row["episode"]),
        steps=int(row["steps"] if timed is None else timed["steps"]),
        reward=None if reward is None else float(reward),
        ended_at=ended,
        evaluation=bool(row["evaluation"]),
    )


def load_series(
    run: str,
    *,
    metric: str = REWARD,
    phase: Match | None = None,
    agent: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> list[Series]:
    """One series per agent of ``run``: its episode rewards, or a statistic's mean per episode.

    Raises:
        UnknownRunError: No such run.
        InvalidInputError: The run has no such phase or agent, no episodes to show, or no
            numeric statistic ``metric``; the message names what it has.
    """
    asked = {k: v for k, v in (("phase", phase), ("agent", agent)) if v is not None}
    unknown = unknown_filter(run, asked, store_uri, instance) if asked else None
    if unknown is not None:  # (a phase's name that names two is no choice either)
        raise InvalidInputError(unknown)
    records = ordered_episodes(
        run, phase=phase, agent=agent, store_uri=store_uri, instance=instance
    )
    if not records:
        what = "" if phase is None and agent is None else " of that phase and agent"
        raise InvalidInputError(f"run '{run}' has no episodes recorded{what}")
    if metric == REWARD:
        return reward_series(records, run)
    found = rows.statistics(run, phase=phase, agent=agent, store_uri=store_uri, instance=instance)
    keys = numeric_keys(found)
    if metric not in keys:
        raise InvalidInputError(_unknown_metric(run, metric, keys))
    return [one for one in statistic_series(records, found, metric, run) if one.values]


def unknown_filter(
    run: str,
    filters: Mapping[str, Match],
    store_uri: StoreURI | None,
    instance: str | None,
) -> str | None:
    """A message naming the first phase, agent, environment or mode of ``filters`` (a
    reader's keyword filters) that the run instance lacks, or None: a typo must not read as a
    table without rows."""
    known_phases = rows.phases(run, store_uri=store_uri, instance=instance)
    unknown = None
    if "phase" in filters:
        unknown = _unknown_phase(run, filters["phase"], known_phases)
    if unknown is None and "agent" in filters:
        known = rows.agents(run, store_uri=store_uri, instance=instance)
        unknown = _unknown_agent(run, filters["agent"], known)
    for key, column, known_rows in (
        ("environment", "environment", "environments"),
        ("mode", "mode", None),
    ):
        if unknown is None and key in filters:
            found = (
                getattr(rows, known_rows)(run, store_uri=store_uri, instance=instance)
                if known_rows
                else known_phases
            )
            unknown = _unknown_value(run, key, filters[key], _unique(r[column] for r in found))
    return unknown


def _unknown_value(run: str, what: str, value: Match, names: list[str]) -> str | None:
    missing = [str(v) for v in _wanted(value) if str(v) not in names]
    if not missing:
        return None
    hint = did_you_mean(missing[0], names)
    message = (
        f"run '{run}' has no {what} '{missing[0]}'; its {what}s: {', '.join(names) or 'none'}"
    )
    return f"{message}. {hint}" if hint else message


def _unknown_phase(run: str, phase: Match, known: Sequence[Row]) -> str | None:
    """A message naming the first phase asked for that the run lacks, or whose name names
    several of its phases (a run file may give two phases one name), or None."""
    phases = {row["name"] for row in known} | {row["phase"] for row in known}
    missing = [p for p in _wanted(phase) if p not in phases]
    listed = ", ".join(f"{row['phase']} ({row['name']})" for row in known) or "none"
    if missing:
        return f"run '{run}' has no phase {missing[0]!r}; its phases: {listed}"
    for wanted in _wanted(phase):
        named = [str(row["phase"]) for row in known if row["name"] == wanted]
        if len(named) > 1:
            return (
                f"run '{run}' has {len(named)} phases named {wanted!r} "
                f"({', '.join(named)}): give the index of the one meant; its phases: {listed}"
            )
    return None


def _unknown_agent(run: str, agent: Match, known: Sequence[Row]) -> str | None:
    """A message naming the first agent asked for that the run lacks, or None."""
    return _unknown_value(run, "agent", agent, _unique(row["agent"] for row in known))


def _wanted(value: Match) -> list[int | str]:
    return [value] if isinstance(value, int | str) else list(value)


def _unknown_metric(run: str, metric: str, keys: Sequence[str]) -> str:
    listed = ", ".join(keys) if keys else "none were recorded"
    hint = did_you_mean(metric, [REWARD, *keys])
    return (
        f"--metric '{metric}': run '{run}' has no numeric statistic '{metric}' "
        f"(metrics: {REWARD}; statistic keys: {listed})" + (f". {hint}" if hint else "")
    )


# --- building series -------------------------------------------------------------------------


def reward_series(records: Sequence[EpisodeRecord], run: str) -> list[Series]:
    """One series of episode rewards per agent (in the order the agents first appear), of its
    training episodes; then, for an agent with evaluation rollouts (``evaluate_every``), one of
    their rewards (metric :data:`EVALUATION`), each at the index and steps of the training
    episode it followed.

    Args:
        records: Episodes in time order (:func:`ordered_episodes`).
        run: The run's uid, for the series' label.
    """
    out = []
    judged = []
    for agent, every in _by_agent(records).items():
        own = [record for record in every if not record.evaluation]
        steps = tuple(itertools.accumulate(record.steps for record in own))
        out.append(
            Series(
                run=run,
                agent=agent,
                metric=REWARD,
                episodes=tuple(range(len(own))),
                steps=steps,
                values=tuple(_value(record) for record in own),
                phases=_phase_starts(own),
                ended=tuple(_ended(record) for record in own),
            )
        )
        if any(record.evaluation for record in every):
            judged.append(_rollout_series(every, steps, run, agent))
    return out + judged


def _rollout_series(
    every: list[EpisodeRecord], steps: tuple[int, ...], run: str, agent: str
) -> Series:
    """The evaluation rollouts among an agent's episodes ``every`` (in time order) as a series,
    each at the index and cumulative ``steps`` of the training episode it followed."""
    after = list(itertools.accumulate(not record.evaluation for record in every))
    rollouts = [(at - 1, r) for at, r in zip(after, every, strict=True) if r.evaluation]
    return Series(
        run=run,
        agent=agent,
        metric=EVALUATION,
        episodes=tuple(max(at, 0) for at, _ in rollouts),
        steps=tuple(steps[at] if at >= 0 else 0 for at, _ in rollouts),
        values=tuple(_value(record) for _, record in rollouts),
        phases=_phase_starts([record for _, record in rollouts]),
        ended=tuple(_ended(record) for _, record in rollouts),
    )


def _value(record: EpisodeRecord) -> float:
    return math.nan if record.reward is None else record.reward


def statistic_series(
    records: Sequence[EpisodeRecord], statistics: Iterable[Row], key: str, run: str
) -> list[Series]:
    """One series per agent of the mean of statistic ``key`` in each episode that recorded it.

    A Brain's rows count for the episode of the Muscle they answered; rows outside any episode
    (episode -1: added while the Brain stored its state) and values that are not numbers are
    left out. Points keep their episode's index and cumulative steps in ``records``, so a
    statistic lines up with the rewards.

    Args:
        records: Episodes in time order (:func:`ordered_episodes`).
        statistics: Rows of :func:`palaestra.store.rows.statistics`.
        key: The statistic key.
        run: The run's uid.
    """
    records = [record for record in records if not record.evaluation]  # (training episodes)
    values: dict[tuple[str, tuple[int, int, int]], list[float]] = {}
    for row in statistics:
        value = (row["statistics"] or {}).get(key)
        if row["episode"] >= 0 and is_number(value):
            where = (int(row["phase"]), int(row["worker"]), int(row["episode"]))
            values.setdefault((row["agent"], where), []).append(float(value))
    out = []
    for agent, own in _by_agent(records).items():
        steps = tuple(itertools.accumulate(record.steps for record in own))
        points = [
            (index, steps[index], sum(found) / len(found), _ended(record))
            for index, record in enumerate(own)
            if (found := values.get((agent, record.key)))
        ]
        out.append(
            Series(
                run=run,
                agent=agent,
                metric=key,
                episodes=tuple(p[0] for p in points),
                steps=tuple(p[1] for p in points),
                values=tuple(p[2] for p in points),
                phases=_phase_starts(own),
                ended=tuple(p[3] for p in points),
            )
        )
    return out


def numeric_keys(statistics: Iterable[Row]) -> list[str]:
    """The statistic keys with at least one number among ``statistics`` rows, in first-seen
    order."""
    keys: dict[str, None] = {}
    for row in statistics:
        for key, value in (row["statistics"] or {}).items():
            if is_number(value):
                keys.setdefault(key)
    return list(keys)


def is_number(value: Any) -> TypeGuard[float]:
    """A real number (an int or a float, not a bool): what a curve can show."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def smooth(values: Sequence[float], window: int) -> tuple[float, ...]:
    """The trailing mean over the last ``window`` values (fewer at the start), skipping NaN.

    Raises:
        ValueError: ``window`` is below 1.
    """
    if window < 1:
        raise ValueError(f"a smoothing window is at least 1, got {window}")
    out = []
    for index in range(len(values)):
        known = [v for v in values[max(0, index - window + 1) : index + 1] if not math.isnan(v)]
        out.append(sum(known) / len(known) if known else math.nan)
    return tuple(out)


def smoothed(series: Series, window: int, settled: bool = False) -> Series:
    """``series`` with its values smoothed (:func:`smooth`), the window starting afresh in each
    phase (a test phase's episodes are not averaged with the training's).

    With ``settled`` (what a drawn line shows): a phase shorter than ten windows is smoothed
    over a tenth of its episodes instead, and the points before a phase's window is full are
    NaN (not drawn): a mean over the first one or two episodes of a phase is noise, the spike
    a curve would show at every phase's start."""
    values = [
        value
        for piece in phase_pieces(series)
        for value in _smooth_phase(series.values[piece], window, settled)
    ]
    return dataclasses.replace(series, values=tuple(values))


def phase_pieces(series: Series) -> list[slice]:
    """The positions of ``series``' points in each phase it has points in, in order."""
    starts = [index for index, _ in series.phases[1:]]
    phase_of = [bisect.bisect_right(starts, episode) for episode in series.episodes]
    cuts = [k for k in range(1, len(phase_of)) if phase_of[k] != phase_of[k - 1]]
    return [slice(a, b) for a, b in itertools.pairwise([0, *cuts, len(phase_of)]) if a < b]


def _smooth_phase(values: Sequence[float], window: int, settled: bool) -> tuple[float, ...]:
    if not settled or window <= 1:
        return smooth(values, window)
    window = max(1, min(window, len(values) // 10))
    return (math.nan,) * (window - 1) + smooth(values, window)[window - 1 :]


AUTO_POINTS = 50
"""A curve smoothed by default is a trailing mean over about 1/AUTO_POINTS of its episodes."""


def auto_window(series: Iterable[Series]) -> int:
    """The default smoothing window of a plot of ``series``: about a fiftieth of the longest
    one's episodes (1, no smoothing, below 100 episodes)."""
    longest = max((len(one.values) for one in series), default=0)
    return max(1, longest // AUTO_POINTS)


DISCRETE_VALUES = 3
"""A series with at most this many distinct values (a win, a draw, a loss) is drawn as its
mean alone when smoothed: its raw values would shade the plot between them like a wall."""


def is_discrete(series: Series) -> bool:
    """Whether ``series`` takes few distinct values (see :data:`DISCRETE_VALUES`)."""
    return len({v for v in series.values if not math.isnan(v)}) <= DISCRETE_VALUES


# --- helpers ---------------------------------------------------------------------------------


def _by_agent(records: Iterable[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    out: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        out.setdefault(record.agent, []).append(record)
    return out


def _ended(record: EpisodeRecord) -> float:
    return math.nan if record.ended_at is None else record.ended_at.timestamp()


def _phase_starts(records: Sequence[EpisodeRecord]) -> tuple[tuple[int, str], ...]:
    starts: list[tuple[int, str]] = []
    phase = None
    for index, record in enumerate(records):
        if record.phase != phase:
            phase = record.phase
            starts.append((index, record.phase_name))
    return tuple(starts)


def _unique(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def run_series(
    run: str, *, store_uri: StoreURI | None = None, instance: str | None = None
) -> list[Series]:
    """Every series of a run instance: each agent's rewards, then each numeric statistic key's
    per agent (what the exporters write)."""
    records = ordered_episodes(run, store_uri=store_uri, instance=instance)
    found = rows.statistics(run, store_uri=store_uri, instance=instance)
    out = reward_series(records, run)
    for key in numeric_keys(found):
        out.extend(one for one in statistic_series(records, found, key, run) if one.values)
    return out
