"""Sparklines: a row of unicode blocks showing how episode rewards went, for a terminal."""

from __future__ import annotations

import math
from collections.abc import Sequence

from palaestra.report.series import ordered_episodes
from palaestra.store.rows import Row, Rows, StoreURI

BLOCKS = "▁▂▃▄▅▆▇█"
"""The eight heights of a sparkline, lowest first."""
_IN_ASCII = str.maketrans(BLOCKS, "_.-:=+*#")
"""The heights in ASCII, for a console whose encoding lacks the blocks (latin-1, ASCII)."""
WIDTH = 16
"""The width of a trend's sparkline unless asked (``experiment-show``'s)."""
GAP = " "
"""What a bin without a number shows."""
TREND_COLUMNS = ("phase", "phase_name", "agent", "episodes", "first", "last", "sparkline")


def binned(values: Sequence[float], bins: int) -> list[float]:
    """The mean of ``values`` in ``bins`` consecutive bins of (nearly) equal size, NaN skipped.

    With no more values than bins, the values themselves (NaN where a bin has no number).

    Raises:
        ValueError: ``bins`` is below 1.
    """
    if bins < 1:
        raise ValueError(f"a sparkline is at least 1 character wide, got {bins}")
    if len(values) <= bins:
        return [float(v) for v in values]
    out = []
    for index in range(bins):
        start = index * len(values) // bins
        end = (index + 1) * len(values) // bins
        known = [v for v in values[start:end] if math.isfinite(v)]
        out.append(sum(known) / len(known) if known else math.nan)
    return out


def sparkline(values: Sequence[float], width: int) -> str:
    """``values`` as at most ``width`` unicode blocks, lowest to highest value ``▁`` to ``█``.

    More values than ``width`` are averaged in bins (:func:`binned`); a bin without a finite
    number is a space; all values equal give a flat line of ``▄``.

    Raises:
        ValueError: ``width`` is below 1.
    """
    points = binned(values, width)
    finite = [v for v in points if math.isfinite(v)]
    if not finite:
        return GAP * len(points)
    low, high = min(finite), max(finite)
    top = len(BLOCKS) - 1
    out = []
    for value in points:
        if not math.isfinite(value):
            out.append(GAP)
        elif high == low:
            out.append(BLOCKS[top // 2])
        else:
            out.append(BLOCKS[round((value - low) / (high - low) * top)])
    return "".join(out)


def for_console(line: str, encoding: str | None) -> str:
    """A sparkline as a console of ``encoding`` can show it: in ASCII (``_.-:=+*#``) where
    that lacks the blocks."""
    try:
        BLOCKS.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return line.translate(_IN_ASCII)
    return line


def reward_trend(
    run: str,
    *,
    width: int = WIDTH,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Rows:
    """Per phase and agent, the sparkline of its training episodes' rewards (workers in time
    order; evaluation rollouts left out).

    Args:
        run: The run's uid.
        width: The sparkline's width in characters.
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``agent``, ``episodes``, ``first`` and ``last`` (the mean
        reward of the first and the last bin; None without a finite one) and ``sparkline``.

    Raises:
        UnknownRunError: No such run (or instance).
    """
    groups: dict[tuple[int, str, str], list[float]] = {}
    for record in ordered_episodes(run, store_uri=store_uri, instance=instance):
        if record.evaluation:  # (the trend is of training episodes)
            continue
        reward = math.nan if record.reward is None else record.reward
        groups.setdefault((record.phase, record.phase_name, record.agent), []).append(reward)
    return Rows((_trend(key, rewards, width) for key, rewards in groups.items()), TREND_COLUMNS)


def _trend(key: tuple[int, str, str], rewards: list[float], width: int) -> Row:
    points = binned(rewards, width)
    first, last = _finite(points[0]), _finite(points[-1])
    values = (*key, len(rewards), first, last, sparkline(rewards, width))
    return dict(zip(TREND_COLUMNS, values, strict=True))


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
