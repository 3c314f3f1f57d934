"""Exporting runs to an MLflow tracking server or store (``palaestra[mlflow]``).

Each instance of a palaestra run becomes one MLflow run, tagged with the palaestra run and
instance uids (an instance exported before is not exported again, one still running not
yet). Params come from the run:
its seed, run file and sweep overrides, each phase's mode, workers and episodes, and each
agent's Brain, Muscle and Objective classes. Metrics are the series of
:func:`~palaestra.report.series.run_series`: ``reward/<agent>`` (step: the episode's index in
time order) and ``statistic/<key>/<agent>`` (the key's mean per episode), each stamped with
the time its episode ended.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from palaestra.core.description.extras import require
from palaestra.core.description.uri import hide_password
from palaestra.core.errors import InvalidInputError
from palaestra.report.series import run_series
from palaestra.store import rows
from palaestra.store.rows import Row, StoreURI

PURPOSE = "palaestra export mlflow"
BATCH = 1000
"""The most metrics MLflow takes in one ``log_batch``."""
PARAMS_BATCH = 100
"""The most params MLflow takes in one ``log_batch``."""
RUN_TAG = "palaestra.run_uid"
INSTANCE_TAG = "palaestra.instance_uid"
STATUS = {"finished": "FINISHED", "error": "FAILED", "cancelled": "KILLED"}
"""MLflow's run status for a palaestra instance's status (others, ``running`` and ``stale``,
stay RUNNING)."""
_UNSAFE = re.compile(r"[^\w\-. /]")
"""What MLflow refuses in a key (its rule, less ``:``, which it refuses on Windows): letters
and digits of any script are kept."""


@dataclass(frozen=True, kw_only=True)
class MlflowRun:
    """One palaestra run instance in MLflow: its MLflow run id, or that it was there before."""

    instance: str
    run_id: str
    metrics: int
    existed: bool
    running: bool = False
    """The instance is still running: not exported (an export of it would stay partial, and
    the exports after it would skip it as exported before)."""


def distinct_keys(names: Iterable[str]) -> dict[str, str]:
    """The MLflow key of each name: characters MLflow refuses become ``_``, and a changed name
    whose key another name has too gets a hash of the name after it (``reward/a_b-<hash>``), so
    two agents (``a(b`` and ``a[b``) never share a metric or param."""
    keys = {name: _UNSAFE.sub("_", name) for name in dict.fromkeys(names)}
    shared = Counter(keys.values())
    return {
        name: key if key == name or shared[key] == 1 else f"{key}-{_digest(name)}"
        for name, key in keys.items()
    }


def _digest(name: str) -> str:
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def export_mlflow(
    run: str,
    tracking_uri: str,
    *,
    experiment: str | None = None,
    store_uri: StoreURI | None = None,
) -> list[MlflowRun]:
    """Export every instance of ``run`` as an MLflow run of ``experiment``.

    Args:
        run: The palaestra run's uid.
        tracking_uri: MLflow's tracking URI (a server, or e.g. ``sqlite:///mlflow.db``).
        experiment: The MLflow experiment (made if missing); default: the palaestra
            experiment's uid.
        store_uri: palaestra's store; None for the configured one.

    Raises:
        MissingExtraError: mlflow is not installed.
        UnknownRunError: No such run.
        InvalidInputError: MLflow refused the tracking URI or what was logged, or cannot make
            its store's path.
    """
    require("mlflow", PURPOSE)
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    record = rows.run_record(run, store_uri=store_uri)
    instances = rows.runs(run=run, store_uri=store_uri)
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        experiment_id = _experiment_id(client, experiment or record["experiment_uid"])
        return [
            _export_instance(client, experiment_id, record, instance, store_uri)
            for instance in instances
        ]
    except (MlflowException, OSError) as exc:  # (OSError: a store's path it cannot make)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        shown = hide_password(tracking_uri)  # (MLflow's message may quote it whole)
        first = first.replace(tracking_uri, shown)
        raise InvalidInputError(f"--tracking-uri {shown}: MLflow: {first}") from exc


def _experiment_id(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))


def _export_instance(
    client: Any, experiment_id: str, record: Row, instance: Row, store_uri: StoreURI | None
) -> MlflowRun:
    from mlflow.entities import Metric, Param

    run, uid = record["run_uid"], instance["instance_uid"]
    if instance["status"] in ("running", "stopped"):  # (stopped: Ctrl-Z, it goes on)
        return MlflowRun(instance=uid, run_id="", metrics=0, existed=False, running=True)
    before = client.search_runs(
        [experiment_id], filter_string=f"tags.`{INSTANCE_TAG}` = '{uid}'", max_results=1
    )
    if before:
        return MlflowRun(instance=uid, run_id=before[0].info.run_id, metrics=0, existed=True)
    started = instance["started_at"]
    created = client.create_run(
        experiment_id,
        start_time=int(started.timestamp() * 1000) if started else None,
        run_name=f"{run} ({uid[:8]})",
        tags={
            RUN_TAG: run,
            INSTANCE_TAG: uid,
            "palaestra.experiment_uid": record["experiment_uid"],
            "palaestra.status": instance["status"],
        },
    )
    run_id = created.info.run_id
    params = [Param(k, v) for k, v in run_params(record, run, uid, store_uri).items()]
    for start in range(0, len(params), PARAMS_BATCH):
        client.log_batch(run_id, params=params[start : start + PARAMS_BATCH])
    now = time.time()
    series = run_series(run, store_uri=store_uri, instance=uid)
    keys = distinct_keys(one.tag for one in series)
    metrics = [
        Metric(keys[one.tag], value, int((when if math.isfinite(when) else now) * 1000), step)
        for one in series
        for step, _, value, when in one.points()
    ]
    for start in range(0, len(metrics), BATCH):
        client.log_batch(run_id, metrics=metrics[start : start + BATCH])
    _finish(client, run_id, instance)
    return MlflowRun(instance=uid, run_id=run_id, metrics=len(metrics), existed=False)


def _finish(client: Any, run_id: str, instance: Row) -> None:
    status = STATUS.get(instance["status"])
    if status is None:
        return
    finished = instance["finished_at"]
    end = int(finished.timestamp() * 1000) if finished else None
    client.set_terminated(run_id, status=status, end_time=end)


def run_params(record: Row, run: str, instance: str, store_uri: StoreURI | None) -> dict[str, str]:
    """The MLflow params of a run instance: seed, run file, overrides, phases and agents."""
    params = {"seed": str(record["seed"]), "run_file": str(record["file"])}
    for key, value in (record["overrides"] or {}).items():
        params[f"override.{key}"] = str(value)
    phases = rows.phases(run, store_uri=store_uri, instance=instance)
    params["phases"] = ",".join(str(row["name"]) for row in phases)
    for row in phases:
        for field in ("mode", "workers", "episodes"):
            params[f"phase.{row['name']}.{field}"] = str(row[field])
    for row in rows.agents(run, store_uri=store_uri, instance=instance):
        for field in ("brain", "muscle", "objective"):
            params.setdefault(f"agent.{row['agent']}.{field}", str(row[field]))
    keys = distinct_keys(params)
    return {keys[key]: value for key, value in params.items()}
