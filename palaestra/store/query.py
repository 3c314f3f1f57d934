"""Results as pandas DataFrames: experiments, runs and the records of a run, for notebooks.

Every function but :func:`experiments` and :func:`runs` takes the run's uid first; all take
``store_uri`` (a URI or an open :class:`~sqlalchemy.Engine`; None reads the configured store:
``PALAESTRA_STORE_URI``, else ``store_uri`` in ``./palaestra-runtime.yaml``, else
``sqlite:///palaestra.db``) and the run-scoped ones ``instance`` (an instance uid; default:
the run's newest instance). Filters are keyword arguments that become SQL WHERE clauses; a
filter takes one value or a list of values, and ``phase`` takes indexes (int) or names (str).

The SQL lives in :mod:`palaestra.store.rows`, which returns the same rows as plain dicts (no
pandas needed). DataFrames are the same on SQLite and PostgreSQL: timestamps
``datetime64[us, UTC]``, JSON columns as Python dicts, counts as ints (a frame without rows
too: its columns have the dtypes they have with rows); infinities and NaN are
floats (the store's JSON holds them as the strings ``"inf"``, ``"-inf"`` and ``"nan"``; see
:mod:`palaestra.core.nonfinite`). The store is opened read-only, so one on read-only media can
be read. An unknown run raises :class:`UnknownRunError` (a :class:`LookupError`) naming the
runs the store has.

Example::

    from palaestra.store import query

    query.runs()
    actions = query.muscle_actions("dummy-run", phase="phase_0", agent="attacker", expand=True)
    query.episode_rewards("dummy-run").groupby(["phase", "agent"])["reward"].mean()
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

from palaestra.store import rows
from palaestra.store.rows import Rows, UnknownRunError, resolve_store_uri

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "UnknownRunError",
    "agents",
    "brain_states",
    "code_reloads",
    "environments",
    "episode_rewards",
    "episodes",
    "evaluations",
    "experiments",
    "muscle_actions",
    "phases",
    "plugin_records",
    "recording_gaps",
    "resolve_store_uri",
    "runs",
    "statistics",
    "to_frame",
    "world_states",
]

PANDAS_MISSING = "palaestra.store.query needs pandas: pip install 'palaestra[pandas]'"

P = ParamSpec("P")


_NUMBERS = (
    "phase worker episode step steps episodes phases workers runs instances id "
    "from_episode from_step to_episode to_step training_episodes"
)
_TEXTS = (
    "phase_name mode agent environment name status run_uid experiment_uid instance_uid reason "
    "palaestra_version code_revision brain muscle tag path source key module checkpoint_id "
    "checkpoint_hash"
)
_TIMES = "created_at started_at finished_at ended_at at"
SAMPLES: dict[str, object] = (
    dict.fromkeys(_NUMBERS.split(), 0)
    | dict.fromkeys(["reward", "objective", "duration_s"], 0.0)
    | dict.fromkeys(["done", "evaluation", "ok"], False)
    | dict.fromkeys(_TEXTS.split(), "")
    | dict.fromkeys(_TIMES.split(), dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
)
"""A value of each column that has a type, by name (the others: JSON values, or None): a frame
without rows gets the dtypes pandas gives these, as it gives a frame's rows; else each of its
columns is ``object``, and so becomes the column of a frame it is concatenated with."""


def to_frame(found: Rows, samples: dict[str, object] | None = None) -> pd.DataFrame:
    """A DataFrame of rows from :mod:`palaestra.store.rows`, with their columns in order; one
    without rows has the dtypes one with rows has (``samples``: a value of a column whose name
    means another type in this table than in :data:`SAMPLES`).

    Raises:
        ImportError: pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(PANDAS_MISSING) from exc
    columns = list(found.columns)
    if found:
        return pd.DataFrame.from_records(list(found), columns=columns)
    typed = SAMPLES | (samples or {})
    sample = {column: typed.get(column) for column in columns}
    return pd.DataFrame.from_records([sample], columns=columns).iloc[:0]


def framed(reader: Callable[P, Rows], **samples: object) -> Callable[P, pd.DataFrame]:
    """The reader of :mod:`palaestra.store.rows` that returns its rows as a DataFrame: the same
    arguments, the same documentation (one signature per table, not a copy here); ``samples``
    as for :func:`to_frame`."""

    @functools.wraps(reader)
    def frame(*args: P.args, **kwargs: P.kwargs) -> pd.DataFrame:
        return to_frame(reader(*args, **kwargs), samples)

    frame.__module__ = __name__
    signature = inspect.signature(reader).replace(return_annotation="pd.DataFrame")
    frame.__signature__ = signature  # type: ignore[attr-defined]
    return frame


experiments = framed(rows.experiments)
runs = framed(rows.runs)
phases = framed(rows.phases)
agents = framed(rows.agents, objective="")  # (its class)
environments = framed(rows.environments)
world_states = framed(rows.world_states)
muscle_actions = framed(rows.muscle_actions)
episodes = framed(rows.episodes)
episode_rewards = framed(rows.episode_rewards)
brain_states = framed(rows.brain_states)
statistics = framed(rows.statistics)
plugin_records = framed(rows.plugin_records)
recording_gaps = framed(rows.recording_gaps)
code_reloads = framed(rows.code_reloads)
evaluations = framed(rows.evaluations, evaluation=0)  # (its index, not a flag)
