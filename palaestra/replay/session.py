"""Replaying a recorded run as ``experiment-replay`` does: phases, workers and episodes in
order, compared with the record, stopping at the first divergence, optionally written as a
new run instance (:mod:`palaestra.replay.copy`)."""

from __future__ import annotations

from dataclasses import dataclass

from palaestra.core.description.loading import load_class
from palaestra.core.errors import PalaestraError
from palaestra.replay.compare import Divergence
from palaestra.replay.copy import Copy
from palaestra.replay.record import PhaseRecord, instance_uid, load_phase, phase_indices
from palaestra.replay.steps import WorkerReplay
from palaestra.store.rows import StoreURI

EXIT_NOT_DETERMINISTIC = 4
"""The exit code of a replay that cannot be compared: an environment declares itself not
deterministic (``replay_deterministic = False``)."""


class NotDeterministicError(PalaestraError):
    """An environment of a replayed phase declares ``replay_deterministic = False``."""

    exit_code = EXIT_NOT_DETERMINISTIC


@dataclass
class Outcome:
    """What a replay did: the instance replayed, how much, the first divergence (None if
    the replay reproduced the record), and the uid of the instance written with ``record``."""

    run: str
    instance: str
    phases: list[int]
    episodes: int
    steps: int
    divergence: Divergence | None
    copy: str | None


def nondeterministic(record: PhaseRecord) -> list[str]:
    """The environments of ``record`` (``uid (module:Class)``) whose class declares
    ``replay_deterministic = False``."""
    return [
        f"{spec.uid} ({spec.name})"
        for spec in record.environments
        if getattr(load_class(spec.name), "replay_deterministic", True) is False
    ]


def replay_run(
    run: str,
    *,
    instance: str | None = None,
    phase: int | str | None = None,
    episode: int | None = None,
    worker: int | None = None,
    until: int | None = None,
    compare: bool = True,
    record: bool = False,
    store_uri: StoreURI | None = None,
) -> Outcome:
    """Replay the run's instance (default: the newest), its phase ``phase`` (default: every
    phase), each worker or ``worker``, each episode or ``episode`` (the episodes before it
    are replayed unchecked), each up to step ``until``.

    Raises:
        UnknownRunError: No such run or instance (exit 2).
        UnknownPartError: No such phase, worker or episode (exit 2).
        NotDeterministicError: ``compare`` and an environment is not deterministic (exit 4).
    """
    uid = instance_uid(run, instance, store_uri)
    records = [
        load_phase(run, uid, i, store_uri) for i in phase_indices(run, uid, phase, store_uri)
    ]
    if compare:
        found = [name for r in records for name in nondeterministic(r)]
        if found:
            raise NotDeterministicError(
                f"run '{run}': environment {', '.join(found)} declares replay_deterministic = "
                "False: its replay cannot be compared with the record. Pass --no-compare to "
                "replay it without comparing."
            )
    copy = Copy(run, uid, store_uri) if record else None
    outcome = Outcome(run, uid, [r.index for r in records], 0, 0, None, None)
    for phase_record in records:
        workers = [worker] if worker is not None else list(range(phase_record.workers))
        for w in workers:
            if _replay_worker(phase_record, w, episode, until, compare, copy, outcome):
                break
        if outcome.divergence is not None:
            break
    if copy is not None:
        reason = f"replay of instance {uid}"
        if outcome.divergence is not None:
            reason += f"; diverged at {outcome.divergence}"
        outcome.copy = copy.write(reason)
    return outcome


def _replay_worker(
    record: PhaseRecord,
    worker: int,
    episode: int | None,
    until: int | None,
    compare: bool,
    copy: Copy | None,
    outcome: Outcome,
) -> bool:
    """Replay the episodes of one worker; True if one diverged."""
    replayer = WorkerReplay(record, worker)
    try:
        for e in [episode] if episode is not None else replayer.episodes:
            replay = replayer.episode(e, compare=compare, until=until)
            divergence = replay.run()
            outcome.episodes += 1
            outcome.steps += len(replay.taken)
            if copy is not None:
                copy.add(record, worker, replay)
            if divergence is not None:
                outcome.divergence = divergence
                return True
    finally:
        replayer.close()
    return False
