"""Runs of palaestra's store written into a palaestrAI 3.5.18 store (``palaestra export
palaestrai``), for paldaque and scripts that use palaestrAI's database model.

Every instance of a run is written, each run in one transaction of the target (a run that
fails leaves nothing there). palaestrAI's tables are made where the target has none
(:mod:`.palaestrai_schema`); the per-step rows are read from palaestra's store in chunks and
inserted in chunks (by ``COPY`` on PostgreSQL). What maps to what:

* ``experiments.name``: the experiment uid; ``experiment_runs``: the run uid, ``document`` the
  run file's text, ``document_json`` its content (with ``user`` None), ``hash`` SHA-512 of that
  content without its uids (palaestrAI's recipe over its expanded config, so palaestrAI's own
  hash of the same file differs).
* ``experiment_run_instances``: the instance uid, ``created_at`` its start (UTC), ``status``
  its status (``cancelled``, which palaestrAI lacks, is ``error``), ``user`` None.
* ``experiment_run_phases``: ``uid`` the phase's name, ``number`` its index, its mode and
  config. A phase's evaluation rollouts (``evaluate_every``) are a phase row of their own, as
  palaestrAI records its evaluation workers: the same ``uid`` and ``number``, mode
  ``evaluate``, config ``{episodes: 1, worker: <workers>, mode: evaluate}``, its own
  environments and agents, and their steps in mode ``evaluate``; their episodes keep
  palaestra's numbers (in the worker's sequence, which the training phase's numbers skip).
  ``environments``: one row per environment and worker (palaestrAI's environment
  process; a game of ``envs_per_worker`` counts as a worker), ``worker_uid``
  ``Environment-<uid>-<worker>``, ``parameters`` its params with that ``uid`` and the
  worker's seed. ``agents``: ``uid`` ``AgentConductor-<name>``, ``muscles``
  ``Muscle-<name>-<worker>`` per worker, ``configuration`` as in the run file.
* ``world_states`` and ``muscle_actions``: sensors, set points and rewards as lists of
  palaestrAI's information objects in jsonpickle's form (``py/object``, ``py/state`` with
  ``uid`` and ``value``; ``space`` None: palaestra stores no space per step; rewards whose uid
  repeats, which palaestra's row keeps as a list, an object each, as palaestrAI keeps them),
  the step as ``step_index`` / ``decision_index``, the worker as ``execution_id``
  (``SimulationController-<worker>``) / ``rollout_worker_uid`` (``Muscle-<name>-<worker>``).
  ``walltime``: palaestra times episodes, not steps: the end of the step's episode (its start
  if it did not end). ``simtime_ticks``/``simtime_timestamp`` and ``simtimes``: the
  environment's simulation time where it reported one, else NULL (palaestrAI counts steps
  there) / absent. ``actuator_setpoints`` and ``applied_actuator_setpoints``: the set points
  the Muscle sent (after its filters; palaestra keeps one). ``statistics``: the Brain's and
  the Muscle's of the step, merged as palaestrAI merges them. ``state_dump`` holds the
  sensors (palaestra records no environment state dump).
* ``brain_states``: the dumps, ``walltime`` when they were made, an empty tag as NULL.
* ``stored_evaluation_results``: each agent's result of each evaluation (``evaluations``),
  ``evaluation_episode`` the evaluation's index (what ``evaluate_rollouts`` is told as
  ``episode``), ``evaluation_id`` SHA-256 of the run uid, instance uid, phase index, agent
  name and that index, each followed by a NUL but the last (palaestrAI's identity of an
  evaluation), ``metrics`` ``{}`` where the Brain returned no result, non-finite ones as the
  strings below (palaestrAI refuses to store them), ``checkpoint_id`` and ``checkpoint_hash``
  cut to 255 characters, ``completed_at`` when the result came, ``payload_hash`` SHA-256 of
  the row's other fields but ``completed_at`` as canonical JSON (sorted keys, no spaces), as
  palaestrAI checks a result stored again. The other tables of palaestrAI's evidence
  (``phase_termination_events``, ``checkpoint_refs``) stay empty.

What a phase did not record has no rows there: with ``record: {every: N}`` (the config's
``record_every``) the steps between, with ``record: episodes`` every step; where recording was
paused (``recording_gaps``) the episodes of the gap, which palaestrAI's tables have no place
to note (the config does not say it).

Non-finite numbers in JSON are the strings ``"inf"``, ``"-inf"`` and ``"nan"``, as in
palaestra's store (PostgreSQL's JSONB has no other form for them).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from sqlalchemy import Connection, Engine, Row, create_engine, delete, insert, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from palaestra.core.errors import InvalidInputError, StoreError
from palaestra.core.nonfinite import json_text, to_strict_json
from palaestra.report import palaestrai_schema as P
from palaestra.report.palaestrai_steps import export_phase, insert_row, naive_utc
from palaestra.store import rows
from palaestra.store import tables as t
from palaestra.store.engine import NOT_A_URL, make_engine, mask_uri
from palaestra.store.rows import Row as Record
from palaestra.store.rows import StoreURI

if TYPE_CHECKING:
    AnyRow: TypeAlias = Row[*tuple[Any, ...]]

CHECKPOINT_TEXT = 255
"""Characters of a checkpoint's id or hash palaestrAI's ``stored_evaluation_results`` keep."""
STATUS = {"running": "running", "finished": "finished", "error": "error", "cancelled": "error"}
"""palaestrAI's instance status for palaestra's (any other is ``error``)."""


class TargetHoldsRunError(InvalidInputError):
    """The target holds a run to be exported already (and ``replace`` was not asked for)."""


@dataclass(frozen=True, kw_only=True)
class ExportedRun:
    """What an export wrote of one run."""

    run: str
    experiment: str
    instances: int
    world_states: int
    muscle_actions: int
    brain_states: int
    replaced: bool


def export_palaestrai(
    runs: Sequence[str],
    target: str,
    *,
    replace: bool = False,
    store_uri: StoreURI | None = None,
) -> list[ExportedRun]:
    """Write every instance of each of ``runs`` into the palaestrAI store at ``target``.

    Args:
        runs: palaestra run uids.
        target: The palaestrAI store's SQLAlchemy URL (SQLite or PostgreSQL; a plain
            ``postgresql://`` uses psycopg 3); its tables are made if it has none.
        replace: Delete a run the target holds already (by experiment name and run uid) and
            write it anew; without it such a run is refused before anything is written.
        store_uri: palaestra's store; None for the configured one.

    Raises:
        UnknownRunError: palaestra's store has no such run (nothing is written).
        TargetHoldsRunError: The target holds a run already and ``replace`` is False.
        StoreError: A store cannot be opened or written, or the target has tables of
            palaestrAI's names that are not palaestrAI's.
    """
    source_uri = rows.resolve_store_uri(store_uri)
    records = [rows.run_record(run, store_uri=source_uri) for run in dict.fromkeys(runs)]
    shown = mask_uri(target)
    with _target(target) as sink, _source(source_uri) as source:
        with _writing(sink, shown, "create palaestrAI's tables") as out:
            P.prepare(out, shown)
        with _writing(sink, shown, "read its runs") as out:
            held = [r for r in records if _run_ids(out, r) is not None]
        if held and not replace:
            raise TargetHoldsRunError(_held(shown, held))
        return [_export_run(source, sink, shown, record) for record in records]


def _held(shown: str, held: list[Record]) -> str:
    which = ", ".join(f"'{r['run_uid']}' (experiment '{r['experiment_uid']}')" for r in held)
    runs, them = ("run", "it") if len(held) == 1 else ("runs", "them")
    return (
        f"target {shown} holds {runs} {which} already, so nothing was written; "
        f"export with --replace to write {them} anew (the rows there are deleted first)"
    )


# --- the stores ------------------------------------------------------------------------------


@contextmanager
def _target(target: str) -> Iterator[Engine]:
    """The target's engine (disposed afterwards), connected once.

    Raises:
        StoreError: Not a database URL, its driver missing, a SQLite file's directory that
            cannot be made, or it cannot be reached.
    """
    url = _target_url(target)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        folder = Path(url.database).expanduser().absolute().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # (a file where a folder of the path should be, no permission)
            raise StoreError(
                f"target {mask_uri(target)}: cannot make its directory {folder}: "
                f"{exc.strerror or exc}"
            ) from exc
    try:
        engine = create_engine(url, json_serializer=json_text)
    except ArgumentError as exc:
        raise StoreError(f"target {mask_uri(target)}: cannot open it: {exc}") from exc
    except ImportError as exc:
        hint = " (pip install 'palaestra[postgres]')" if url.drivername.endswith("psycopg") else ""
        raise StoreError(
            f"target {mask_uri(target)}: its database driver is not installed: {exc}{hint}"
        ) from exc
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(f"target {mask_uri(target)}: cannot connect: {_reason(exc)}") from exc
    try:
        yield engine
    finally:
        engine.dispose()


def _target_url(target: str) -> URL:
    try:
        url = make_url(target)
    except NOT_A_URL as exc:
        raise StoreError(
            f"target {mask_uri(target)}: not a database URL (e.g. sqlite:///palaestrai.db, "
            "postgresql://user@host:5432/database)"
        ) from exc
    if url.drivername == "postgresql":
        return url.set(drivername="postgresql+psycopg")
    return url


@contextmanager
def _source(store: StoreURI) -> Iterator[Engine]:
    """palaestra's store (read-only), an engine made here disposed afterwards."""
    if isinstance(store, Engine):
        yield store
        return
    engine = make_engine(store, read_only=True)
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def _writing(sink: Engine, shown: str, doing: str) -> Iterator[Connection]:
    """A transaction of the target, committed at the end; database errors become a
    StoreError naming the target and what was being done."""
    try:
        with sink.begin() as out:
            yield out
    except SQLAlchemyError as exc:
        raise StoreError(f"target {shown}: cannot {doing}: {_reason(exc)}") from exc


def _reason(exc: SQLAlchemyError) -> str:
    original = getattr(exc, "orig", None)
    return str(original if original is not None else exc).splitlines()[0]


# --- one run ---------------------------------------------------------------------------------


def _export_run(source: Engine, sink: Engine, shown: str, record: Record) -> ExportedRun:
    run, experiment = record["run_uid"], record["experiment_uid"]
    counts: Counter[str] = Counter()
    with _writing(sink, shown, f"write run '{run}'") as out, source.connect() as src:
        replaced = _delete_run(out, record)
        document = _document(record["document"])
        run_id = insert_row(
            out,
            P.experiment_runs,
            uid=run,
            hash=_hash(document),
            experiment_id=_experiment_id(out, experiment),
            document=record["document"],
            document_json=None if document is None else {"user": None, **document},
        )
        instances = src.execute(
            select(*t.experiment_run_instances.c["id", "uid", "status", "started_at"])
            .join(
                t.experiment_runs,
                t.experiment_run_instances.c.experiment_run_id == t.experiment_runs.c.id,
            )
            .where(t.experiment_runs.c.uid == run)
            .order_by(t.experiment_run_instances.c.id)
        ).all()
        for instance in instances:
            _export_instance(src, out, (run, run_id), instance, counts)
    return ExportedRun(
        run=run,
        experiment=experiment,
        instances=len(instances),
        world_states=counts["world_states"],
        muscle_actions=counts["muscle_actions"],
        brain_states=counts["brain_states"],
        replaced=replaced,
    )


def _document(text: str) -> dict[str, Any] | None:
    """The run file's content; None if it is not a YAML mapping."""
    try:
        document = YAML(typ="safe").load(text)
    except YAMLError:
        return None
    return document if isinstance(document, dict) else None


def _hash(document: dict[str, Any] | None) -> str | None:
    if document is None:
        return None
    content = {k: v for k, v in document.items() if k not in ("uid", "experiment_uid")}
    text = json.dumps(content, separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha512(text.encode()).hexdigest()


def _experiment_id(out: Connection, name: str) -> int:
    table = P.experiments
    found = out.scalar(select(table.c.id).where(table.c.name == name))
    if found is not None:
        return int(found)
    return insert_row(out, table, name=name, document=None, document_json=None)


def _run_ids(out: Connection, record: Record) -> list[int] | None:
    """The ids of the target's runs of the record's experiment name and run uid; None if
    there are none."""
    runs, experiments = P.experiment_runs, P.experiments
    found = out.scalars(
        select(runs.c.id)
        .join(experiments, runs.c.experiment_id == experiments.c.id)
        .where(experiments.c.name == record["experiment_uid"], runs.c.uid == record["run_uid"])
    ).all()
    return [int(i) for i in found] or None


def _delete_run(out: Connection, record: Record) -> bool:
    """Delete what the target holds of the record's run (children first, and palaestrAI's
    evidence of its instances); False if it holds nothing of it."""
    run_ids = _run_ids(out, record)
    if run_ids is None:
        return False
    instances = P.experiment_run_instances
    instance_ids = select(instances.c.id).where(instances.c.experiment_run_id.in_(run_ids))
    uids = select(instances.c.uid).where(instances.c.experiment_run_id.in_(run_ids))
    phases = P.experiment_run_phases
    phase_ids = select(phases.c.id).where(phases.c.experiment_run_instance_id.in_(instance_ids))
    agent_ids = select(P.agents.c.id).where(P.agents.c.experiment_run_phase_id.in_(phase_ids))
    env_ids = select(P.environments.c.id).where(
        P.environments.c.experiment_run_phase_id.in_(phase_ids)
    )
    by_instance = [P.stored_evaluation_results, P.phase_termination_events, P.checkpoint_refs]
    for statement in [
        delete(P.muscle_actions).where(P.muscle_actions.c.agent_id.in_(agent_ids)),
        delete(P.brain_states).where(P.brain_states.c.agent_id.in_(agent_ids)),
        delete(P.world_states).where(P.world_states.c.environment_id.in_(env_ids)),
        delete(P.agents).where(P.agents.c.experiment_run_phase_id.in_(phase_ids)),
        delete(P.environments).where(P.environments.c.experiment_run_phase_id.in_(phase_ids)),
        *(
            delete(table).where(table.c.experiment_run_instance_uid.in_(uids))
            for table in by_instance
        ),
        delete(phases).where(phases.c.experiment_run_instance_id.in_(instance_ids)),
        delete(instances).where(instances.c.experiment_run_id.in_(run_ids)),
        delete(P.experiment_runs).where(P.experiment_runs.c.id.in_(run_ids)),
    ]:
        out.execute(statement)
    return True


# --- one instance, phase by phase -------------------------------------------------------------


def _export_instance(
    src: Connection,
    out: Connection,
    run: tuple[str, int],
    instance: AnyRow,
    counts: Counter[str],
) -> None:
    """The instance's row, its phases and their rows (``run``: the run's uid and its id in
    the target)."""
    run_uid, run_id = run
    instance_id = insert_row(
        out,
        P.experiment_run_instances,
        uid=instance.uid,
        created_at=naive_utc(instance.started_at),
        user=None,
        status=STATUS.get(instance.status, "error"),
        experiment_run_id=run_id,
    )
    phases = src.execute(
        select(
            *t.experiment_run_phases.c[
                "id", "index", "name", "mode", "workers", "config", "started_at", "finished_at"
            ]
        )
        .where(t.experiment_run_phases.c.experiment_run_instance_id == instance.id)
        .order_by(t.experiment_run_phases.c.index)
    ).all()
    for phase in phases:
        counts.update(export_phase(src, out, instance_id, phase))
    _export_evaluations(src, out, run_uid, instance)


def _export_evaluations(src: Connection, out: Connection, run_uid: str, instance: AnyRow) -> None:
    """The instance's evaluation results as palaestrAI's ``stored_evaluation_results`` (see
    the module's description)."""
    phases = t.experiment_run_phases
    found = src.execute(
        select(
            phases.c.index,
            t.agents.c.name,
            *t.evaluations.c["evaluation", "metrics", "checkpoint_id", "checkpoint_hash", "at"],
        )
        .join(t.agents, t.evaluations.c.agent_id == t.agents.c.id)
        .join(phases, t.agents.c.experiment_run_phase_id == phases.c.id)
        .where(phases.c.experiment_run_instance_id == instance.id)
        .order_by(t.evaluations.c.id)
    ).all()
    for row in found:
        identity = [run_uid, instance.uid, str(row.index), row.name, str(row.evaluation)]
        payload = {
            "evaluation_id": hashlib.sha256("\0".join(identity).encode()).hexdigest(),
            "experiment_run_uid": run_uid,
            "experiment_run_instance_uid": instance.uid,
            "experiment_run_phase": row.index,
            "agent_name": row.name,
            "evaluation_episode": row.evaluation,
            "metrics": to_strict_json(row.metrics or {}),
            "checkpoint_id": _cut(row.checkpoint_id),
            "checkpoint_hash": _cut(row.checkpoint_hash),
        }
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        payload_hash = hashlib.sha256(text.encode()).hexdigest()
        out.execute(  # (its key is the id: insert_row's is an integer)
            insert(P.stored_evaluation_results).values(
                **payload, completed_at=row.at, payload_hash=payload_hash
            )
        )


def _cut(text: str | None) -> str | None:
    """A checkpoint's id or hash as palaestrAI's column holds it (255 characters)."""
    return None if text is None else text[:CHECKPOINT_TEXT]
