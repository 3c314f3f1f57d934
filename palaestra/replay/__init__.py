"""Replaying recorded runs: the environments of a recorded phase rebuilt and driven with the
recorded set points (no Muscles, no Brains), compared with the record step by step.

From Python::

    from palaestra import replay

    with replay.open("my-run", phase=0, episode=2, worker=0) as steps:
        for step in steps:
            print(step.step, step.recorded["env"]["sensors"], step.live["env"].sensors)
            env = step.environments["env"]  # the live environment object
            if step.step == 5:
                step.substitute({"env.0": 3})  # a new trajectory from here: no comparison

An environment class that cannot be replayed bit for bit declares
``replay_deterministic = False`` (see :func:`nondeterministic`).
"""

from __future__ import annotations

from palaestra.environment.environment import Environment
from palaestra.replay.compare import Divergence
from palaestra.replay.record import (
    PhaseRecord,
    UnknownPartError,
    instance_uid,
    load_phase,
    phase_indices,
)
from palaestra.replay.session import (
    EXIT_NOT_DETERMINISTIC,
    NotDeterministicError,
    Outcome,
    nondeterministic,
    replay_run,
)
from palaestra.replay.steps import EpisodeReplay, Step, WorkerReplay
from palaestra.store.rows import StoreURI


def open(  # the name the API promises: palaestra.replay.open
    run: str,
    *,
    phase: int | str = 0,
    episode: int = 0,
    worker: int = 0,
    instance: str | None = None,
    store_uri: StoreURI | None = None,
    compare: bool = True,
) -> EpisodeReplay:
    """Replay one recorded episode of one worker, step by step.

    The episodes of the worker before ``episode`` are replayed first (unchecked), so that an
    environment's state, its random generator included, is the one it had in the run.

    Args:
        run: The run's uid.
        phase: The phase's index or name.
        episode: The episode (0-based).
        worker: The worker.
        instance: The run instance's uid; None for the newest.
        store_uri: The store; None for the configured one.
        compare: Compare each step with the record (:attr:`Step.divergence`).

    Returns:
        An iterator of :class:`Step`, and a context manager that shuts the live
        environments down when left.

    Raises:
        UnknownRunError: No such run or instance (exit 2).
        UnknownPartError: No such phase, worker or episode in the record (exit 2).
    """
    uid = instance_uid(run, instance, store_uri)
    index = phase_indices(run, uid, phase, store_uri)[0]
    record = load_phase(run, uid, index, store_uri)
    replay = WorkerReplay(record, worker).episode(episode, compare=compare)
    replay.owns_world = True
    return replay


__all__ = [
    "EXIT_NOT_DETERMINISTIC",
    "Divergence",
    "Environment",
    "EpisodeReplay",
    "NotDeterministicError",
    "Outcome",
    "PhaseRecord",
    "Step",
    "UnknownPartError",
    "WorkerReplay",
    "load_phase",
    "nondeterministic",
    "open",
    "replay_run",
]
