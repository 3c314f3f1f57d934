"""The Python API: ``palaestra.run`` and ``palaestra.sweep`` return results bound to their runs.

Example::

    import palaestra

    result = palaestra.run("experiments/dummy_run.yml", store_uri="sqlite:///runs.db")
    print(result.status, result.reason)
    result.episode_rewards().groupby("agent")["reward"].mean()

    results = palaestra.sweep(
        "experiments/dummy_run.yml",
        seeds=range(1, 4),
        grid={"schedule.0.phase_0.environments.0.environment.params.max_iter": [10, 20]},
        parallel=2,
    )

A run executes in an executor process of its own (:mod:`palaestra.experiment.isolated`), so
these work from a script, from a thread and from a running event loop (a Jupyter notebook),
and leave the calling process as it was. What cannot start (an invalid run file, a bad
override path, an unusable runtime config) raises a :class:`~palaestra.core.errors.
PalaestraError` before anything runs; a run that started and failed does not raise: its
result has ``status == "error"`` and the ``reason``. Ctrl-C (a notebook's interrupt) stops the
executing runs cleanly and starts no more: their results say ``cancelled``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.machinery
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from ruamel.yaml import YAML

from palaestra.core.description.config import taken
from palaestra.core.description.import_path import add_plugin_dirs
from palaestra.core.description.specs import RunSpec
from palaestra.core.errors import EXIT_OK, InvalidInputError, RunFileError
from palaestra.core.supervision import interrupts
from palaestra.experiment.executor import RunOutcome, writable_data_path
from palaestra.experiment.overrides import (
    Override,
    OverrideError,
    apply_overrides,
    derived_uids,
    expand_grid,
    in_original,
    shown,
)
from palaestra.experiment.runtime_config import RuntimeConfig, load_runtime_config

__all__ = ["RunResult", "prepare_runs", "result_of", "run", "status_of", "sweep"]

RunSource = str | os.PathLike[str] | Mapping[str, Any]
"""A run file's path, or the run-file document as a dict."""

_QUIET_LOG_LEVEL = "ERROR"


def status_of(exit_code: int) -> str:
    """The store's word for a run instance that ended with ``exit_code``."""
    if exit_code == EXIT_OK:
        return "finished"
    if exit_code > 128:
        return "cancelled"
    return "error"


@dataclass(frozen=True)
class RunResult:
    """How one run ended, and its records, read from the store it wrote to.

    The query methods take the filters of :mod:`palaestra.store.query` (``phase``, ``agent``,
    ``episode``, ...) and return DataFrames where pandas is installed, else
    :class:`~palaestra.store.rows.Rows` (lists of dicts).
    """

    run_uid: str
    instance_uid: str
    experiment_uid: str
    status: str
    """``finished``, ``error`` or ``cancelled``, as in the store."""
    exit_code: int
    """What ``experiment-start`` would have exited with: 0, 1 (failed), 2, 3, or 128 + signal."""
    reason: str
    store_uri: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True if the run finished."""
        return self.exit_code == EXIT_OK

    def phases(self, **filters: Any) -> Any:
        """The run's phases (see :func:`palaestra.store.query.phases`)."""
        return self._query("phases", filters)

    def agents(self, **filters: Any) -> Any:
        """The agents of each phase (see :func:`palaestra.store.query.agents`)."""
        return self._query("agents", filters)

    def environments(self, **filters: Any) -> Any:
        """The environments of each phase (see :func:`palaestra.store.query.environments`)."""
        return self._query("environments", filters)

    def world_states(self, **filters: Any) -> Any:
        """One row per environment step (see :func:`palaestra.store.query.world_states`)."""
        return self._query("world_states", filters)

    def muscle_actions(self, **filters: Any) -> Any:
        """One row per agent step (see :func:`palaestra.store.query.muscle_actions`)."""
        return self._query("muscle_actions", filters)

    def episode_rewards(self, **filters: Any) -> Any:
        """Rewards summed per episode (see :func:`palaestra.store.query.episode_rewards`)."""
        return self._query("episode_rewards", filters)

    def brain_states(self, **filters: Any) -> Any:
        """The brain dumps (see :func:`palaestra.store.query.brain_states`)."""
        return self._query("brain_states", filters)

    def statistics(self, **filters: Any) -> Any:
        """What plug-ins recorded with ``add_statistics`` (see
        :func:`palaestra.store.query.statistics`)."""
        return self._query("statistics", filters)

    def _query(self, name: str, filters: dict[str, Any]) -> Any:
        if self.store_uri == "none":
            raise InvalidInputError(f"run '{self.run_uid}' was recorded nowhere (store 'none').")
        if not self.instance_uid:
            raise InvalidInputError(
                f"run '{self.run_uid}' has no instance in the store: {self.reason}"
            )
        function: Callable[..., Any] = getattr(_query_module(), name)
        return function(
            self.run_uid, store_uri=self.store_uri, instance=self.instance_uid, **filters
        )


def _query_module() -> Any:
    try:
        import pandas  # noqa: F401 - only whether it is there
    except ImportError:
        from palaestra.store import rows

        return rows
    from palaestra.store import query

    return query


def run(
    run_file: RunSource,
    *,
    store_uri: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    quiet: bool = True,
    config: RuntimeConfig | None = None,
) -> RunResult:
    """Run one experiment run to its end and return its result.

    Args:
        run_file: A run file's path, or its document as a dict.
        store_uri: Where to record it; None for the configured store (``PALAESTRA_STORE_URI``,
            ``./palaestra-runtime.yaml``, else ``sqlite:///palaestra.db``).
        overrides: Dotted path to value (``{"seed": 3, "schedule.0.train.agents.0.brain.
            params.lr": 0.01}``); the run then gets a derived uid (see
            :mod:`palaestra.experiment.overrides`) unless the overrides set ``uid``.
        quiet: Log errors only (else the runtime config's log level).
        config: The runtime configuration; None to read it as the command line does.

    Returns:
        The run's result; ``status`` says whether it finished.

    Raises:
        PalaestraError: The run could not start: invalid run file, override or config.
    """
    from palaestra.experiment.sweep import run_all

    settings = _settings(config, store_uri, quiet)
    with _imported_anew(run_file):
        ((spec, point),) = prepare_runs(run_file, [_plain(dict(overrides or {}))], settings)
        with interrupts.forgotten_after():  # (its result says cancelled: the caller lives on)
            (outcome,) = run_all([spec], settings)
    return result_of(outcome, spec, point, settings.store_uri)


def sweep(
    run_file: RunSource,
    *,
    seeds: Iterable[int] = (),
    grid: Mapping[str, Sequence[Any]] | None = None,
    parallel: int = 1,
    store_uri: str | None = None,
    quiet: bool = True,
    config: RuntimeConfig | None = None,
) -> list[RunResult]:
    """Run every combination of ``seeds`` and the ``grid`` values, ``parallel`` at a time.

    Args:
        run_file: A run file's path, or its document as a dict.
        seeds: Seeds of the runs (the top-level ``seed``).
        grid: Dotted path to the values it takes (as ``--set path=v1,v2``).
        parallel: How many runs execute at once, each in its own executor process (with
            ``backend: ray`` in ``config``: on the Ray cluster, see "Sweeps on Ray").
        store_uri: As for :func:`run`.
        quiet: As for :func:`run`.
        config: As for :func:`run`.

    Returns:
        One result per run, in grid order; a failed run does not stop the others.

    Raises:
        PalaestraError: A run could not start (see :func:`run`), ``parallel`` is below 1,
            ``seeds`` is no collection of integers, or a grid entry is not a non-empty list of
            values; before any run starts.
    """
    from palaestra.experiment.ray_cluster import check_backend

    if parallel < 1:
        raise InvalidInputError(f"parallel must be 1 or more, got {parallel}.")
    grid = _plain(dict(grid or {}))  # (numpy's values as Python's: YAML writes those only)
    for path, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise InvalidInputError(
                f"grid['{path}']: expected a non-empty list of values, got "
                f"{type(values).__name__} {values!r}."
            )
    if not isinstance(seeds, Iterable) or isinstance(seeds, str | bytes):
        raise InvalidInputError(
            f"seeds: expected the seeds' integers (a list or a range), got "
            f"{type(seeds).__name__} {seeds!r}."
        )
    settings = _settings(config, store_uri, quiet)
    check_backend(settings)  # backend: ray: the extra and a shared store, before anything
    with _imported_anew(run_file):
        outcomes, prepared = _swept(run_file, seeds, grid, parallel, settings)
    return [
        result_of(outcome, spec, point, settings.store_uri)
        for (spec, point), outcome in zip(prepared, outcomes, strict=True)
    ]


def _swept(
    run_file: RunSource,
    seeds: Iterable[int],
    grid: Mapping[str, Sequence[Any]],
    parallel: int,
    settings: RuntimeConfig,
) -> tuple[list[RunOutcome], list[tuple[RunSpec, dict[str, Any]]]]:
    """The sweep's runs checked, then executed: their outcomes, and their specs and overrides,
    in grid order."""
    from palaestra.experiment.sweep import run_all

    axes = [Override(path, tuple(values)) for path, values in grid.items()]
    prepared = prepare_runs(run_file, expand_grid(tuple(_plain(list(seeds))), axes), settings)
    specs = [spec for spec, _ in prepared]
    if settings.backend == "ray":
        from palaestra.experiment.ray_cluster import session
        from palaestra.experiment.ray_sweep import run_all_on_ray

        with session(settings) as ray, interrupts.forgotten_after():
            return run_all_on_ray(ray, specs, settings, parallel=parallel), prepared
    with interrupts.forgotten_after():  # (their results say cancelled)
        return run_all(specs, settings, parallel=parallel), prepared


@contextlib.contextmanager
def _imported_anew(run_file: RunSource) -> Iterator[None]:
    """Around a call of :func:`run` or :func:`sweep`: the modules it imports from the
    directories of plug-ins (the run file's, the working directory: see
    :func:`~palaestra.core.description.import_path.add_plugin_dirs`) are forgotten as it
    returns, and the next call imports them anew. The calling process lives on (a REPL, a
    notebook's kernel) while its user edits them: kept, a later run file's check read them as
    first imported (a class added since refused as missing), and an executor forked from the
    caller ran that code, not the file's. Those it was given imported stay."""
    dirs = {os.path.realpath(path) for path in _plugin_dirs(run_file)}
    before = set(sys.modules)
    importlib.invalidate_caches()  # (a module file new since the last call is found)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if _found_in(name, dirs):
                del sys.modules[name]


def _found_in(name: str, dirs: set[str]) -> bool:
    """Whether module ``name`` is a plug-in's in Python: its top-level module or package lies
    in one of ``dirs``, and neither is it palaestra's own (run from its checkout) nor an
    extension module (which Python cannot import anew)."""
    top = name.partition(".")[0]
    spec = getattr(sys.modules.get(top), "__spec__", None)
    own = getattr(sys.modules.get(name), "__spec__", None)
    if spec is None or top == __name__.partition(".")[0]:
        return False
    if own is not None and isinstance(own.loader, importlib.machinery.ExtensionFileLoader):
        return False
    places = list(spec.submodule_search_locations or ())  # a package: its directories
    if not places and spec.origin:
        places = [spec.origin]
    return any(os.path.dirname(os.path.realpath(place)) in dirs for place in places)


def prepare_runs(
    run_file: RunSource, grid: Sequence[Mapping[str, Any]], config: RuntimeConfig
) -> list[tuple[RunSpec, dict[str, Any]]]:
    """Check the run file with each point of ``grid`` applied, before any of them runs.

    Returns:
        Each run's spec (with a derived uid and its ``overrides``) and its overrides.

    Raises:
        PalaestraError: The run file, or one with an override applied, is invalid.
    """
    from palaestra.experiment.runfile import load_run_text

    base = _load(run_file, config)
    text, path = base.document, base.path
    prepared: list[tuple[RunSpec, dict[str, Any]]] = []
    for point, uid in zip(grid, derived_uids(base.uid, grid), strict=True):
        if not point:
            prepared.append((base, {}))
            continue
        derived = apply_overrides(text, point, uid=uid, source=path)
        try:
            spec = load_run_text(
                derived,
                path=path,
                probe_timeout=config.probe_timeout,
                start_method=config.start_method,
            )
        except RunFileError as exc:
            raise in_original(exc, text, point) from exc.__cause__
        prepared.append((msgspec.structs.replace(spec, overrides=dict(point)), dict(point)))
    _refuse_shared_uids(prepared, path)
    return prepared


def _refuse_shared_uids(prepared: Sequence[tuple[RunSpec, dict[str, Any]]], path: str) -> None:
    """Refuse a grid whose runs would share a uid (``--set uid=x --seeds 1,2``: derived uids
    differ, a uid set by an override is kept): the store holds one run per uid, whose record
    the later run would overwrite, and the run's view shows its newest instance only.

    Raises:
        OverrideError: Naming the uid and the overrides of two runs that share it.
    """
    first: dict[str, dict[str, Any]] = {}
    for spec, point in prepared:
        if spec.uid in first:
            raise OverrideError(
                f"{path}: two runs of the sweep would have the uid {spec.uid!r} (overrides "
                f"{shown(first[spec.uid])} and {shown(point)}); each run needs its own. "
                "Set uid to as many values as the other overrides make runs, or leave it to "
                "the sweep (a derived uid per run)."
            )
        first[spec.uid] = point


def result_of(
    outcome: RunOutcome, spec: RunSpec, overrides: Mapping[str, Any], store_uri: str
) -> RunResult:
    """The result of a run from its outcome."""
    return RunResult(
        run_uid=outcome.run_uid,
        instance_uid=outcome.instance_uid,
        experiment_uid=spec.experiment_uid,
        status=status_of(outcome.exit_code),
        exit_code=outcome.exit_code,
        reason=outcome.message,
        store_uri=store_uri,
        overrides=dict(overrides),
    )


def _settings(config: RuntimeConfig | None, store_uri: str | None, quiet: bool) -> RuntimeConfig:
    settings = config if config is not None else load_runtime_config()
    if store_uri is not None:
        settings = dataclasses.replace(settings, store_uri=store_uri)
    settings = taken(settings)  # (a store_uri or a config given here: as a read one)
    settings = dataclasses.replace(settings, store_uri=absolute_store_uri(settings.store_uri))
    if settings.backend != "ray":  # (refused here, not in the run's own process)
        writable_data_path(settings.data_path)
    if quiet:
        settings = dataclasses.replace(settings, log_level=_QUIET_LOG_LEVEL)
    return settings


def absolute_store_uri(store_uri: str) -> str:
    """A SQLite URI with a relative path made absolute (results read from anywhere)."""
    from sqlalchemy.engine import make_url

    from palaestra.store.engine import NOT_A_URL

    try:
        url = make_url(store_uri)
    except NOT_A_URL:
        return store_uri  # "none", or what the store will refuse with its own message
    database = url.database
    if not url.drivername.startswith("sqlite") or not database or database == ":memory:":
        return store_uri
    if database.startswith("file:") or os.path.isabs(database):
        return store_uri
    return url.set(database=os.path.abspath(database)).render_as_string(hide_password=False)


def _load(run_file: RunSource, config: RuntimeConfig) -> RunSpec:
    """The run as written: from its file, or from a dict written out as YAML."""
    from palaestra.experiment.runfile import load_run_file, load_run_text

    _plugin_dirs(run_file)
    if isinstance(run_file, Mapping):
        out = io.StringIO()
        YAML(typ="safe", pure=True).dump(_plain(run_file), out)
        return load_run_text(
            out.getvalue(),
            path="<dict>",
            probe_timeout=config.probe_timeout,
            start_method=config.start_method,
        )
    return load_run_file(
        run_file, probe_timeout=config.probe_timeout, start_method=config.start_method
    )


def _plugin_dirs(run_file: RunSource) -> list[str]:
    """Put the directories plug-ins are imported from on the import path, as
    ``experiment-start`` does (beside the run file, then the working directory; a dict's: the
    working directory), and return them."""
    return add_plugin_dirs([] if isinstance(run_file, Mapping) else [os.fspath(run_file)])


def _plain(value: Any) -> Any:
    """Mappings and sequences as dicts and lists, which the safe dumper writes, and numpy's
    scalars and arrays (``np.float64(0.1)``, ``np.linspace(...)``) as Python's numbers and
    lists, which it writes too (it failed on them with a bare ``RepresenterError``)."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
