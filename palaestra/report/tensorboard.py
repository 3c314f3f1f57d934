"""Exporting a run's curves as TensorBoard scalars (``palaestra[tensorboard]``).

Written with TensorBoard's own event file writer (no torch, no TensorFlow). Each run goes to a
directory of its own, so ``tensorboard --logdir DIR`` shows runs side by side. Tags:
``reward/<agent>`` (step: the episode's index in time order), ``reward_by_steps/<agent>``
(step: the cumulative environment steps) and ``statistic/<key>/<agent>`` and
``statistic_by_steps/<key>/<agent>`` (the key's mean per episode). Each value's wall time is
when its episode ended. TensorBoard keeps scalars as 32-bit floats.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palaestra.core.description.extras import require
from palaestra.core.errors import InvalidInputError
from palaestra.report.series import Series, run_series
from palaestra.store.rows import StoreURI

PURPOSE = "palaestra export tensorboard"


@dataclass(frozen=True, kw_only=True)
class Exported:
    """What an export wrote: where, how many tags and how many values."""

    where: str
    tags: int
    values: int


def export_tensorboard(
    run: str,
    directory: str | Path,
    *,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> Exported:
    """Write the run's rewards and statistics as scalars to ``directory/<run uid>``.

    Raises:
        MissingExtraError: tensorboard is not installed.
        UnknownRunError: No such run (or instance).
        InvalidInputError: The run's directory already holds event files, or cannot be made.
    """
    require("tensorboard", PURPOSE)
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    target = check_target(run, directory)
    series = run_series(run, store_uri=store_uri, instance=instance)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"-o {directory}: cannot make {target}: {exc}") from exc
    writer = EventFileWriter(str(target))
    count = 0
    try:
        for event in _events(series, time.time()):
            writer.add_event(event)
            count += 1
    finally:
        writer.close()
    return Exported(where=str(target), tags=2 * len(series), values=count)


def check_target(run: str, directory: str | Path) -> Path:
    """The run's directory in ``directory``.

    Raises:
        InvalidInputError: It already holds event files (the curves would be doubled).
    """
    target = Path(directory) / run
    if target.is_dir() and any(target.glob("events.out.tfevents.*")):
        raise InvalidInputError(
            f"{target} already holds TensorBoard event files: remove it, or export to another "
            "directory (-o), so the curves are not doubled"
        )
    return target


def _events(series: list[Series], wall_time: float) -> Iterator[Any]:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    for one in series:
        by_steps = one.tag.replace("/", "_by_steps/", 1)  # reward_by_steps/<agent>, ...
        for episode, steps, value, when in one.points():
            at = when if math.isfinite(when) else wall_time
            for tag, step in ((one.tag, episode), (by_steps, steps)):
                summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
                yield Event(wall_time=at, step=step, summary=summary)
