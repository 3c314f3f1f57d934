"""Offline learning: the recorded steps an agent's ``replay`` names, found before its phase.

palaestrAI's ``replay`` key: before a train phase starts, the executor asks the store for the
recorded ``muscle_actions`` of each source (a run, a phase, an agent; see
:mod:`palaestra.experiment.runfile_replay`), checks that the recorded agent had this agent's
sensors and actuators, and hands the steps to the agent's Brain with its
:class:`~palaestra.core.wire.messages.AgentSetup`. The Brain process feeds them into the Brain's
memory and calls its ``pretrain`` hook (:mod:`palaestra.agent.pretrain`); the Brain process
never opens the store itself, as with brain dumps.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from palaestra.core.description.specs import AgentSpec, PhaseSpec, ReplaySpec, RunSpec
from palaestra.core.errors import RunFileError
from palaestra.core.wire import messages as m

LOG = logging.getLogger(__name__)

Ask = Callable[[m.Msg], Awaitable[Any]]
"""Asks the store a question and returns its answer (the executor's store client)."""


async def recorded_steps(
    ask: Ask, run: RunSpec, phase: PhaseSpec, agent: AgentSpec, instance: str | None = None
) -> list[m.RecordedSteps]:
    """The recorded steps ``agent``'s Brain is pre-trained on in ``phase``: one item per
    source and recorded worker (none if it has no ``replay`` or the phase does not train,
    as in palaestrAI, whose Brains pre-train in train phases only). A source in this run
    (no ``instance:``) is read from ``instance``, the one running (and those it continues).

    Raises:
        RunFileError: A source the store does not have (run, instance, phase, agent), one
            that recorded no steps, or a recorded agent whose sensors or actuators are not
            this agent's (exit 2, naming the run file and the ``replay`` item).
    """
    if not agent.replay:
        return []
    if phase.config.mode != "train":
        LOG.info(
            "agent '%s' in phase %d (%s) is not pre-trained: its 'replay' applies to train "
            "phases only",
            agent.name,
            phase.index,
            phase.config.mode,
        )
        return []
    found: list[m.RecordedSteps] = []
    for index, source in enumerate(agent.replay):
        answer, where = await _find(
            ask, run, phase, agent, source, first_episode=False, own=instance
        )
        rows = sum(len(s.rows) for s in answer.steps)
        LOG.info(
            "agent '%s' in phase %d is pre-trained on %d recorded steps of %s (%d workers)%s",
            agent.name,
            phase.index,
            rows,
            where,
            len(answer.steps),
            f", {source.repeat} times" if source.repeat > 1 else "",
        )
        found.extend(
            m.RecordedSteps(
                source=where, worker=s.worker, rows=s.rows, repeat=source.repeat, index=index
            )
            for s in answer.steps
        )
    return found


async def check_other_runs(ask: Ask, run: RunSpec) -> None:
    """Before the run starts: check every ``replay`` source in another run (of a train
    phase) as :func:`recorded_steps` will, reading only its first episode, so that a bad one
    fails before the first phase, not when its phase comes.

    Raises:
        RunFileError: As :func:`recorded_steps`.
    """
    for phase in run.phases:
        if phase.config.mode != "train":
            continue
        for agent in phase.agents:
            for source in agent.replay:
                if source.experiment_run not in (None, run.uid):
                    await _find(ask, run, phase, agent, source, first_episode=True)


async def _find(
    ask: Ask,
    run: RunSpec,
    phase: PhaseSpec,
    agent: AgentSpec,
    source: ReplaySpec,
    *,
    first_episode: bool,
    own: str | None = None,
) -> tuple[m.StoreReplay, str]:
    """The store's answer for ``source`` (checked) and where it is, in words; a source in
    this run without an instance of its own is read from ``own`` (the running instance)."""
    run_uid = source.experiment_run or run.uid
    continued = own is not None and run_uid == run.uid and source.instance is None
    request = m.StoreFindReplay(
        run_uid=run_uid,
        agent=source.agent or agent.name,
        phase=source.phase if source.phase is not None else phase.index - 1,
        instance=own if continued else source.instance,
        first_episode=first_episode,
        continued=continued,
    )
    where = describe(request)
    answer = await ask(request)
    if not isinstance(answer, m.StoreReplay):  # a run without a store answers StoreAck
        _fail(run, source, f"{where} cannot be read: this run has no store.")
    if answer.problem:
        _fail(run, source, f"{answer.problem}.")
    _check_matches(run, source, agent, answer, where)
    return answer, where


def describe(request: m.StoreFindReplay) -> str:
    """Where a replay source's steps come from, in words."""
    named = request.instance and not request.continued  # (not the running instance's own)
    instance = f" (instance {request.instance})" if named else ""
    return f"agent '{request.agent}' in phase {request.phase} of run '{request.run_uid}'{instance}"


def _check_matches(
    run: RunSpec, source: ReplaySpec, agent: AgentSpec, answer: m.StoreReplay, where: str
) -> None:
    """Fail unless the recorded agent had exactly this agent's sensors and actuators."""
    for kind, wanted, recorded in (
        ("sensors", agent.sensors, answer.sensors),
        ("actuators", agent.actuators, answer.actuators),
    ):
        missing = [uid for uid in wanted if uid not in recorded]
        extra = [uid for uid in recorded if uid not in wanted]
        if missing or extra:
            parts = [f"lacks {', '.join(missing)}" if missing else "", ""]
            parts[1] = f"has {', '.join(extra)} besides" if extra else ""
            _fail(
                run,
                source,
                f"the {kind} of {where} are not those of agent '{agent.name}': the record "
                f"{' and '.join(p for p in parts if p)}.",
                "A Brain is pre-trained only on steps of an agent with its sensors and actuators.",
            )


def _fail(run: RunSpec, source: ReplaySpec, message: str, hint: str | None = None) -> NoReturn:
    raise RunFileError(
        message, path=run.path or None, line=source.line, key=source.key or "replay", hint=hint
    )
