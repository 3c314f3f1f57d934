"""The mean and spread of an agent's series over several runs, and which runs belong together
in a sweep (those that differ only by seed)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from palaestra.report.series import Series

SEED = "seed"
"""The override key of a run's seed in a sweep (``experiment_runs.overrides``)."""


@dataclass(frozen=True, kw_only=True)
class Band:
    """The mean and spread of one agent's series (``metric``) over several runs, point by point.

    Points are aligned by episode index; each holds the runs that have that episode: ``steps``
    is the mean of their cumulative steps, ``std`` the population standard deviation (0 where
    one run has the episode), ``count`` how many runs have a value there.
    """

    agent: str
    metric: str
    runs: tuple[str, ...]
    episodes: tuple[int, ...]
    steps: tuple[float, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    std: tuple[float, ...]
    count: tuple[int, ...]
    group: str = ""
    """What the runs share beyond the agent, e.g. ``lr=0.1`` in a sweep (empty: nothing said)."""

    @property
    def label(self) -> str:
        """``agent`` or ``agent (group)``."""
        return f"{self.agent} ({self.group})" if self.group else self.agent


def aggregate(series: Sequence[Series]) -> list[Band]:
    """The mean and spread per agent over ``series`` of several runs, by episode index.

    Series of the same agent and metric are combined; NaN values are left out of a point.
    """
    groups: dict[tuple[str, str], list[Series]] = {}
    for one in series:
        groups.setdefault((one.agent, one.metric), []).append(one)
    return [_band(agent, metric, group) for (agent, metric), group in groups.items()]


def sweep_groups(overrides: Mapping[str, Mapping[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """Runs grouped by their sweep overrides other than the seed: a group's runs differ by seed
    only.

    Args:
        overrides: Each run's overrides (``experiment_runs.overrides``: dotted path to value;
            None for a run as written), in the order wanted.

    Returns:
        ``(label, runs)`` per group in first-seen order; the label names the other overrides'
        last path parts and values (``lr=0.1, gamma=0.9``), empty if there are none.
    """
    groups: dict[str, tuple[str, list[str]]] = {}
    names = short_names({key for given in overrides.values() for key in given or {}})
    for run, given in overrides.items():
        rest = sorted((k, v) for k, v in (given or {}).items() if k != SEED)
        label = ", ".join(f"{names[key]}={value}" for key, value in rest)
        groups.setdefault(repr(rest), (label, []))[1].append(run)
    return list(groups.values())


def short_names(paths: set[str]) -> dict[str, str]:
    """Each dotted path's shortest tail that ends in a key, not in a list index (``lr``;
    ``layers.0``), and that no other of ``paths`` ends in (``0.brain.params.lr`` beside
    ``1.brain.params.lr``)."""
    names: dict[str, str] = {}
    for path in paths:
        parts = path.split(".")
        last = next((i for i in range(len(parts) - 1, -1, -1) if not parts[i].isdigit()), 0)
        for start in range(last, -1, -1):
            tail = ".".join(parts[start:])
            if not any(other != path and ("." + other).endswith("." + tail) for other in paths):
                break
        names[path] = tail
    return names


def is_seed_sweep(overrides: Mapping[str, Mapping[str, Any] | None]) -> bool:
    """Whether ``overrides`` are of a sweep over seeds: every run set its seed, and some runs
    differ by seed only."""
    if not overrides or not all(given and SEED in given for given in overrides.values()):
        return False
    return any(len(runs) > 1 for _, runs in sweep_groups(overrides))


def grouped_bands(
    series: Sequence[Series], overrides: Mapping[str, Mapping[str, Any] | None]
) -> list[Band]:
    """:func:`aggregate` per group of :func:`sweep_groups`, each band labelled with its group."""
    return [
        dataclasses.replace(band, group=label)
        for label, runs in sweep_groups(overrides)
        for band in aggregate([one for one in series if one.run in runs])
    ]


def _band(agent: str, metric: str, group: list[Series]) -> Band:
    at: dict[int, list[tuple[float, float]]] = {}
    for one in group:
        for episode, steps, value in zip(one.episodes, one.steps, one.values, strict=True):
            if not math.isnan(value):
                at.setdefault(episode, []).append((float(steps), value))
    episodes = sorted(at)
    columns: dict[str, list[float]] = {name: [] for name in ("steps", "mean", "low", "high")}
    std: list[float] = []
    for episode in episodes:
        values = [value for _, value in at[episode]]
        mean = sum(values) / len(values)
        columns["steps"].append(sum(steps for steps, _ in at[episode]) / len(values))
        columns["mean"].append(mean)
        columns["low"].append(min(values))
        columns["high"].append(max(values))
        std.append(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)))
    return Band(
        agent=agent,
        metric=metric,
        runs=tuple(one.run for one in group),
        episodes=tuple(episodes),
        steps=tuple(columns["steps"]),
        mean=tuple(columns["mean"]),
        low=tuple(columns["low"]),
        high=tuple(columns["high"]),
        std=tuple(std),
        count=tuple(len(at[episode]) for episode in episodes),
    )
