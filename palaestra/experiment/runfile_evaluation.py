"""palaestrAI's AgentEvaluationObjectiveTerminationCondition in a run file: its rules and the
phases it can end.

As palaestrAI 3.5.18, the condition takes one worker per phase (``worker: 1``) and a positive
``evaluate_every`` in every train phase; its rules (params ``agents``) are checked when the run
file is loaded, so a malformed one is an invalid run file (exit 2), not a failed run. A train
phase that sets no ``episodes`` (palaestrAI's cap-free form) ends by the rules alone (bounded
by :data:`~palaestra.core.description.specs.COUNT_MAX` episodes); a test phase must set them.
"""

from __future__ import annotations

import msgspec

from palaestra.core.description.specs import COUNT_MAX, PhaseSpec
from palaestra.core.errors import RunFileError
from palaestra.experiment.evaluation import (
    AgentEvaluationObjectiveTerminationCondition,
    RuleError,
    is_evaluation_condition,
)
from palaestra.experiment.runfile_schema import Node, as_mapping, as_params

__all__ = [
    "check_evaluation_condition",
    "evaluations_not_inherited",
    "is_evaluation_condition",
    "refuse_in_simulation",
    "sets_no_episodes",
    "without_caps",
]

_WHY_ONE_WORKER = (
    "AgentEvaluationObjectiveTerminationCondition supports one worker, as palaestrAI's: "
    "evaluations of several workers' mixed episodes would have no single checkpoint."
)


def sets_no_episodes(phase_config: Node) -> bool:
    """Whether a phase's ``phase_config`` (after inheritance) omits ``episodes`` or sets it
    null: under the evaluation condition a train phase is then bounded by its rules only."""
    fields = phase_config.value
    if not isinstance(fields, dict):
        return True
    episodes = fields.get("episodes")
    return episodes is None or episodes.value is None


def evaluations_not_inherited(phase_config: Node, own: Node | None) -> Node:
    """A phase's ``phase_config`` (after inheritance; ``own``: the one it writes, if any)
    without the ``evaluate_every`` of a phase before it where the phase is not a train phase:
    evaluations pause training, and a test phase that inherited them played evaluation
    rollouts between its test episodes, which the run's evaluation condition could end early
    (palaestrAI, which replaces a phase's ``phase_config`` whole, plays none there)."""
    fields = phase_config.value
    if not isinstance(fields, dict) or "evaluate_every" not in fields:
        return phase_config
    mode = fields.get("mode")
    if mode is None or not isinstance(mode.value, str) or mode.value.lower() == "train":
        return phase_config
    if own is not None and isinstance(own.value, dict) and "evaluate_every" in own.value:
        return phase_config  # (its own: as palaestrAI, played)
    kept = {key: node for key, node in fields.items() if key != "evaluate_every"}
    return Node(kept, phase_config.key, phase_config.line)


def without_caps(phases: tuple[PhaseSpec, ...], uncapped: set[int]) -> tuple[PhaseSpec, ...]:
    """``phases`` with the train phases of ``uncapped`` (indices) bounded by the largest count
    palaestra keeps instead of one episode: palaestrAI's cap-free form."""
    return tuple(
        msgspec.structs.replace(
            phase, config=msgspec.structs.replace(phase.config, episodes=COUNT_MAX)
        )
        if phase.index in uncapped and phase.config.mode == "train"
        else phase
        for phase in phases
    )


def check_evaluation_condition(
    condition: Node, phases: tuple[PhaseSpec, ...], uncapped: set[int] | None = None
) -> None:
    """Check the run's evaluation condition (its node under ``run_config``) and the phases
    (``uncapped``: the indices of those that set no ``episodes``).

    Raises:
        RunFileError: A rule is malformed, a phase has more than one worker, a train phase
            has no positive ``evaluate_every``, or a test phase sets no ``episodes``.
    """
    fields = as_mapping(condition, allowed=("name", "params"))
    params = fields.get("params")
    try:
        AgentEvaluationObjectiveTerminationCondition(**as_params(params))
    except RuleError as exc:
        key = f"{(params or condition).key}.{exc.key}"
        raise RunFileError(
            exc.message,
            line=(params or condition).line,
            key=key,
            hint="See palaestra.experiment.evaluation for the rules' form.",
        ) from None
    for phase in phases:
        where = f"schedule[{phase.index}].{phase.name}.phase_config"
        if phase.config.worker != 1:
            raise RunFileError(
                f"expected 1 worker, got {phase.config.worker}.",
                key=f"{where}.worker",
                hint=_WHY_ONE_WORKER,
            )
        if phase.config.mode == "train" and phase.config.evaluate_every < 1:
            raise RunFileError(
                "a train phase ended by AgentEvaluationObjectiveTerminationCondition needs "
                "evaluate_every >= 1 (training episodes between evaluations).",
                key=f"{where}.evaluate_every",
            )
        if phase.config.mode != "train" and phase.index in (uncapped or set()):
            raise RunFileError(
                "a test phase under AgentEvaluationObjectiveTerminationCondition needs "
                "episodes (only train phases may leave them out, to end by the rules alone).",
                key=f"{where}.episodes",
            )


def refuse_in_simulation(item: Node) -> None:
    """Refuse the condition if ``item``, an entry of a phase's ``simulation.conditions``,
    names it.

    Raises:
        RunFileError: It does: it ends phases, as the run's condition only.
    """
    name = item.value.get("name") if isinstance(item.value, dict) else None
    if name is None or not isinstance(name.value, str) or not is_evaluation_condition(name.value):
        return
    as_mapping(item, allowed=("name", "params"))["name"].fail(
        "AgentEvaluationObjectiveTerminationCondition ends phases on evaluations: it is the "
        "run's condition, not a simulation condition.",
        "Name it under run_config.condition (with phase_config.evaluate_every).",
    )
