"""Results as pandas DataFrames: experiments, runs and the records of a run, for notebooks.

Every function but :func:`experiments` and :func:`runs` takes the run's uid first; all take
``store_uri`` (a URI or an open :class:`~sqlalchemy.Engine`; None reads the configured store:
``PALAESTRA_STORE_URI``, else ``store_uri`` in ``./palaestra-runtime.yaml``, else
``sqlite:///palaestra.db``) and the run-scoped ones ``instance`` (an instance uid; default:
the run's newest instance). Filters are keyword arguments that become SQL WHERE clauses; a
filter takes one value or a list of values, and ``phase`` takes indexes (int) or names (str).

The SQL lives in :mod:`palaestra.store.rows`, which returns the same rows as plain dicts (no
pandas needed). DataFrames are the same on SQLite and PostgreSQL: timestamps
``datetime64[us, UTC]``, JSON columns as Python dicts, counts as ints; infinities and NaN are
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

from typing import TYPE_CHECKING

from palaestra.store import rows
from palaestra.store.rows import Match, Rows, StoreURI, UnknownRunError, resolve_store_uri

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
    "experiments",
    "muscle_actions",
    "phases",
    "resolve_store_uri",
    "runs",
    "statistics",
    "to_frame",
    "world_states",
]

PANDAS_MISSING = "palaestra.store.query needs pandas: pip install 'palaestra[pandas]'"


def to_frame(found: Rows) -> pd.DataFrame:
    """A DataFrame of rows from :mod:`palaestra.store.rows`, with their columns in order.

    Raises:
        ImportError: pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(PANDAS_MISSING) from exc
    return pd.DataFrame.from_records(list(found), columns=list(found.columns))


def experiments(*, store_uri: StoreURI | None = None) -> pd.DataFrame:
    """One row per experiment: ``experiment_uid``, ``created_at``, ``runs``, ``instances``."""
    return to_frame(rows.experiments(store_uri=store_uri))


def runs(
    *,
    experiment: Match | None = None,
    run: Match | None = None,
    store_uri: StoreURI | None = None,
) -> pd.DataFrame:
    """One row per run instance, oldest first, optionally of some experiments or runs only.

    Columns: ``run_uid``, ``experiment_uid``, ``instance_uid``, ``status``, ``reason``,
    ``started_at``, ``finished_at``, ``duration_s``, ``phases``, ``episodes`` (episodes ×
    workers summed over the phases), ``palaestra_version``, ``code_revision``.
    """
    return to_frame(rows.runs(experiment=experiment, run=run, store_uri=store_uri))


def phases(
    run: str, *, store_uri: StoreURI | None = None, instance: str | None = None
) -> pd.DataFrame:
    """The phases of a run: ``phase`` (index), ``name``, ``mode``, ``workers``, ``episodes``,
    ``status``, ``started_at``, ``finished_at``, ``duration_s``, ``config``."""
    return to_frame(rows.phases(run, store_uri=store_uri, instance=instance))


def agents(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """The agents of each phase: ``phase``, ``phase_name``, ``agent``, ``brain``, ``muscle``,
    ``objective``, ``config``, ``seeds``, ``loaded_from``."""
    return to_frame(
        rows.agents(run, phase=phase, agent=agent, store_uri=store_uri, instance=instance)
    )


def environments(
    run: str,
    *,
    phase: Match | None = None,
    environment: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """The environments of each phase: ``phase``, ``phase_name``, ``environment`` (uid),
    ``name`` (class), ``params``, ``seeds``."""
    found = rows.environments(
        run, phase=phase, environment=environment, store_uri=store_uri, instance=instance
    )
    return to_frame(found)


def world_states(
    run: str,
    *,
    phase: Match | None = None,
    episode: Match | None = None,
    environment: Match | None = None,
    worker: Match | None = None,
    mode: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """One row per environment step, by phase, environment, worker, episode and step.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        episode: Episode number(s).
        environment: Environment uid(s).
        worker: Worker number(s).
        mode: Phase mode(s), e.g. ``"train"``.
        expand: Replace ``sensors`` and ``setpoints`` by one column per uid
            (``sensor.<uid>``, ``setpoint.<uid>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``environment``, ``worker``, ``episode``,
        ``step``, ``sensors``, ``setpoints``, ``rewards``, ``done``, ``terminated``,
        ``truncated`` (how the environment said the episode ended; None where it does not say).
        A phase with ``record: {every: N}`` has the rows of every N-th step and the last only,
        one with ``record: episodes`` none.
    """
    found = rows.world_states(
        run,
        phase=phase,
        episode=episode,
        environment=environment,
        worker=worker,
        mode=mode,
        store_uri=store_uri,
        instance=instance,
    )
    return to_frame(rows.expand(found) if expand else found)


def muscle_actions(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    episode: Match | None = None,
    mode: Match | None = None,
    worker: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """One row per agent step, by phase, agent, worker, episode and step.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        agent: Agent name(s).
        episode: Episode number(s).
        mode: Phase mode(s), e.g. ``"test"``.
        worker: Worker number(s).
        expand: Replace ``sensor_readings`` and ``actuator_setpoints`` by one column per uid
            (``sensor.<uid>``, ``setpoint.<uid>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``worker``, ``episode``, ``step``,
        ``sensor_readings``, ``actuator_setpoints``, ``rewards``, ``reward`` (the step's total),
        ``objective``, ``done``, ``terminated``, ``truncated`` (how the episode ended, in its
        last row; False before; None where the environments do not say). A phase with
        ``record: {every: N}`` has the rows of every N-th step and the last only, one with
        ``record: episodes`` none.
    """
    found = rows.muscle_actions(
        run,
        phase=phase,
        agent=agent,
        episode=episode,
        mode=mode,
        worker=worker,
        store_uri=store_uri,
        instance=instance,
    )
    return to_frame(rows.expand(found) if expand else found)


def episode_rewards(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    mode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """Per phase, agent, worker and episode: ``phase``, ``phase_name``, ``mode``, ``agent``,
    ``worker``, ``episode``, ``steps``, ``reward`` and ``objective`` (sums; NaN where no step
    had one). A phase that recorded every step is summed from its muscle actions by the
    database; one that recorded fewer (``record``) reads its episodes: the same reward,
    ``steps`` the world's steps, ``objective`` NaN."""
    found = rows.episode_rewards(
        run, phase=phase, agent=agent, mode=mode, store_uri=store_uri, instance=instance
    )
    return to_frame(found)


def brain_states(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    with_dump: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """The brain dumps: ``id``, ``phase``, ``phase_name``, ``agent``, ``tag``, ``path``,
    ``created_at`` and, with ``with_dump``, ``dump`` (bytes)."""
    found = rows.brain_states(
        run,
        phase=phase,
        agent=agent,
        with_dump=with_dump,
        store_uri=store_uri,
        instance=instance,
    )
    return to_frame(found)


def statistics(
    run: str,
    *,
    phase: Match | None = None,
    agent: Match | None = None,
    source: Match | None = None,
    episode: Match | None = None,
    mode: Match | None = None,
    worker: Match | None = None,
    expand: bool = False,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """What Brains and Muscles recorded with ``add_statistics`` (palaestrAI's API): one row per
    source, worker, episode and step that had any.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        agent: Agent name(s).
        source: ``"brain"`` or ``"muscle"``.
        episode: Episode number(s).
        mode: Phase mode(s).
        worker: Worker number(s) (for a Brain's row: of the Muscle it answered).
        expand: Replace ``statistics`` by one column per key (``statistic.<key>``).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``agent``, ``source``, ``worker``, ``episode``,
        ``step``, ``statistics`` (the values by key).
    """
    found = rows.statistics(
        run,
        phase=phase,
        agent=agent,
        source=source,
        episode=episode,
        mode=mode,
        worker=worker,
        store_uri=store_uri,
        instance=instance,
    )
    return to_frame(rows.expand(found) if expand else found)


def plugin_records(
    run: str,
    *,
    phase: Match | None = None,
    source: Match | None = None,
    key: Match | None = None,
    worker: Match | None = None,
    episode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """What plug-ins recorded with ``context.record(key, value)``: one row per value.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        source: ``brain:<agent>``, ``muscle:<agent>`` or ``env:<uid>``, or several.
        key: The key(s) recorded.
        worker: Worker number(s).
        episode: Episode number(s).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``source``, ``worker``, ``episode``, ``step``,
        ``key``, ``value``.
    """
    found = rows.plugin_records(
        run,
        phase=phase,
        source=source,
        key=key,
        worker=worker,
        episode=episode,
        store_uri=store_uri,
        instance=instance,
    )
    return to_frame(found)


def recording_gaps(
    run: str, *, store_uri: StoreURI | None = None, instance: str | None = None
) -> pd.DataFrame:
    """Where recording was paused (``experiment-record pause``): ``phase``, ``phase_name``,
    ``mode``, ``worker``, ``from_episode``, ``from_step`` (the first step not recorded),
    ``to_episode``, ``to_step`` (the first recorded again; None if it stayed paused)."""
    return to_frame(rows.recording_gaps(run, store_uri=store_uri, instance=instance))


def code_reloads(
    run: str,
    *,
    phase: Match | None = None,
    source: Match | None = None,
    worker: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """The hot reloads of the run's plug-ins (``experiment-start --reload``): one row per
    plug-in rebuilt at each change of its module's file.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        source: ``muscle:<agent>``, ``objective:<agent>`` or ``brain:<agent>``, or several.
        worker: Worker number(s) (a Brain's row: the worker whose step it answered first).
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``source``, ``worker``, ``episode``, ``step``
        (the first step the new code ran, or the step at which a failed reload was tried),
        ``module``, ``path``, ``ok``, ``error`` (the traceback, if it failed), ``at``.
    """
    found = rows.code_reloads(
        run, phase=phase, source=source, worker=worker, store_uri=store_uri, instance=instance
    )
    return to_frame(found)


def episodes(
    run: str,
    *,
    phase: Match | None = None,
    worker: Match | None = None,
    mode: Match | None = None,
    store_uri: StoreURI | None = None,
    instance: str | None = None,
) -> pd.DataFrame:
    """One row per phase, worker and episode, in the order the episodes started.

    Args:
        run: The run's uid.
        phase: Phase index (int) or name (str), or several.
        worker: Worker number(s).
        mode: Phase mode(s), e.g. ``"train"``.
        store_uri: The store; None for the configured one.
        instance: An instance uid; None for the newest.

    Returns:
        ``phase``, ``phase_name``, ``mode``, ``worker``, ``episode``, ``started_at``,
        ``ended_at``, ``steps`` (of the world), ``terminated``, ``truncated`` (None where the
        environments do not say) and ``rewards`` (each agent's episode reward by name: the sum
        of its steps' ``reward``). Every phase has them, whatever it ``record``-ed.
    """
    found = rows.episodes(
        run, phase=phase, worker=worker, mode=mode, store_uri=store_uri, instance=instance
    )
    return to_frame(found)
