"""Learning curves as an image file: series and bands drawn with matplotlib (``palaestra[plot]``).

matplotlib is imported when a curve is drawn, never at import, and drawn without pyplot (no
display, no global figure state).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palaestra.core.description.extras import require
from palaestra.report.bands import Band
from palaestra.report.series import (
    EVALUATION,
    REWARD,
    Series,
    is_discrete,
    phase_pieces,
    smoothed,
)

X_AXES = ("episode", "steps")
BANDS = ("minmax", "std")
MARKERS_BELOW = 30
"""A line with fewer points than this shows a marker at each."""


def draw(
    path: str | Path,
    *,
    series: Sequence[Series] = (),
    bands: Sequence[Band] = (),
    x: str = "episode",
    window: int = 1,
    band: str = "minmax",
    title: str | None = None,
) -> None:
    """Draw ``series`` (one line each) and ``bands`` (a mean line in a shaded band each).

    Args:
        path: The image file; its suffix picks the format (``.png``, ``.svg``, ``.pdf``).
        series: Lines of single runs; with ``window`` > 1 each is drawn faint and its trailing
            mean over ``window`` episodes on top (a series of few distinct values, wins and
            losses, as its mean alone: a rate).
        bands: Means over runs, shaded between min and max (``band="minmax"``) or one standard
            deviation either side (``band="std"``).
        x: ``"episode"`` (index in time order) or ``"steps"`` (cumulative steps).
        window: The smoothing window of ``series`` (episodes).
        band: ``"minmax"`` or ``"std"``.
        title: The figure's title.

    Raises:
        MissingExtraError: matplotlib is not installed.
        ValueError: ``x`` or ``band`` is none of the known ones.
    """
    if x not in X_AXES or band not in BANDS:
        raise ValueError(f"x is one of {X_AXES} and band one of {BANDS}, got {x!r}, {band!r}")
    require("matplotlib", "palaestra plot")
    from matplotlib import rc_context

    with rc_context({"text.parse_math": False}):  # names as they are: $x^2$, not x²
        _draw(path, series, bands, x, window, band, title)


def _draw(
    path: str | Path,
    series: Sequence[Series],
    bands: Sequence[Band],
    x: str,
    window: int,
    band: str,
    title: str | None,
) -> None:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(9, 5), layout="constrained")
    axes = figure.add_subplot()
    for one in series:
        _line(axes, one, x, window)
    for combined in bands:
        _band(axes, combined, x, band)
    if len({one.run for one in series}) == 1 and not bands:
        _phase_marks(axes, series[0], x)
    metrics = {one.metric for one in series} | {one.metric for one in bands}
    axes.set_xlabel("episode (workers in time order)" if x == "episode" else "steps (cumulative)")
    if x == "episode":
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # no episode 0.5
    axes.set_ylabel(_y_label(metrics, window if series else 1))
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    if title:
        axes.set_title(title)
    figure.savefig(Path(path), dpi=100)


def _xs(one: Series | Band, x: str) -> Sequence[float]:
    return one.episodes if x == "episode" else one.steps


def _line(axes: Any, one: Series, x: str, window: int) -> None:
    """One series, a segment per phase; with ``window`` > 1 faint, its mean on top. An
    agent's evaluation rollouts (few points, each a test of the policy) are drawn as they are,
    dashed, a diamond each."""
    if one.metric == EVALUATION:
        _segments(axes, one, one.values, x, label=one.label, marker="D", linestyle="--")
        return
    if window <= 1:
        _segments(axes, one, one.values, x, label=one.label)
        return
    color = None
    if not is_discrete(one):
        color = _segments(axes, one, one.values, x, alpha=0.25, linewidth=0.8, markers=False)
    label = f"{one.label} (mean of {window})"
    _segments(axes, one, smoothed(one, window, settled=True).values, x, label=label, color=color)


def _segments(
    axes: Any, one: Series, values: Sequence[float], x: str, markers: bool = True, **style: Any
) -> Any:
    """Draw ``values`` of ``one`` as a line per phase (a test phase's first episode is not
    joined to training's last), in one colour, labelled once; a short segment gets a marker
    at each point. Returns the colour."""
    chosen = style.pop("marker", None)
    for piece in phase_pieces(one):
        xs = [float(at) for at in _xs(one, x)[piece]]
        marker = chosen or ("." if markers and len(xs) < MARKERS_BELOW else None)
        (line,) = axes.plot(xs, list(values[piece]), marker=marker, **style)
        style = {**style, "color": line.get_color(), "label": None}
    return style.get("color")


def _band(axes: Any, one: Band, x: str, band: str) -> None:
    xs = _xs(one, x)
    runs = f"{len(one.runs)} runs"
    (mean,) = axes.plot(xs, one.mean, label=f"{one.label}: mean of {runs}")
    if band == "minmax":
        low, high, what = one.low, one.high, "min–max"
    else:
        low = tuple(m - s for m, s in zip(one.mean, one.std, strict=True))
        high = tuple(m + s for m, s in zip(one.mean, one.std, strict=True))
        what = "±1 std"
    axes.fill_between(
        xs, low, high, color=mean.get_color(), alpha=0.2, label=f"{one.label}: {what}"
    )


def _phase_marks(axes: Any, one: Series, x: str) -> None:
    """A dotted line where each phase after the first begins, labelled with its name."""
    for index, name in one.phases[1:]:
        where = index - 0.5 if x == "episode" else _steps_before(one, index)
        axes.axvline(where, color="grey", linestyle=":", linewidth=1)
        axes.annotate(
            name,
            (where, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            fontsize="small",
            color="grey",
        )


def _steps_before(one: Series, index: int) -> float:
    """The cumulative steps at the end of the point before episode ``index``."""
    before = [s for e, s in zip(one.episodes, one.steps, strict=True) if e < index]
    return float(before[-1]) if before else 0.0


def _y_label(metrics: set[str], window: int = 1) -> str:
    over = f", trailing mean of {window} episodes" if window > 1 else ""
    if metrics <= {REWARD, EVALUATION}:  # (the evaluation rollouts' rewards beside)
        return f"episode reward{over}"
    if len(metrics) == 1:
        return f"{next(iter(metrics))} (mean per episode{over})"
    return ", ".join(sorted(metrics))
