"""The ``replay`` key of a run file's agents: the recorded runs its Brain is pre-trained on.

As in palaestrAI, ``replay`` is a list of sources, each a mapping of ``agent`` (default: this
agent), ``experiment_run`` (default: this run), ``phase`` (a phase index; default: the phase
before this one) and ``repeat`` (how many times the steps are fed; default 1). palaestra also
reads ``instance`` (a run instance uid; default: the run's newest) and accepts ``strict``
(palaestra's replay is always strict: a source with no recorded steps is an error).
palaestrAI's ``mode``, ``sensors`` and ``actuators`` projections are not offered.
"""

from __future__ import annotations

from palaestra.core.description.specs import ReplaySpec
from palaestra.experiment.runfile_schema import (
    Node,
    as_bool,
    as_int,
    as_list,
    as_mapping,
    as_name,
    as_str,
    optional,
)

_KEYS = ("agent", "experiment_run", "phase", "instance", "repeat", "strict")
_UNSUPPORTED = {
    "mode": "the phase's mode is not a filter of the recorded steps in palaestra",
    "sensors": "the recorded agent's sensors must be this agent's; remove 'sensors'",
    "actuators": "the recorded agent's actuators must be this agent's; remove 'actuators'",
}


def replay_sources(node: Node | None, phase_index: int) -> tuple[ReplaySpec, ...]:
    """Return the sources an agent's ``replay`` names (none if the key is absent or empty).

    ``phase_index`` is the index of the agent's phase: a source in this run must name an
    earlier phase (the phase before this one if it names none), so phase 0 needs a ``phase``
    or another ``experiment_run``.
    """
    if node is None:
        return ()
    items = [node] if isinstance(node.value, dict) else as_list(node)
    return tuple(_source(item, phase_index) for item in items)


def _source(node: Node, phase_index: int) -> ReplaySpec:
    fields = as_mapping(node, allowed=_KEYS, unsupported=_UNSUPPORTED)
    agent = optional(fields, "agent")
    run = optional(fields, "experiment_run")
    phase = optional(fields, "phase")
    instance = optional(fields, "instance")
    repeat = optional(fields, "repeat")
    if "strict" in fields and fields["strict"].value is not None:
        as_bool(fields["strict"])  # palaestra's replay is always strict
    index = as_int(phase, minimum=0) if phase is not None else None
    chosen = index if index is not None else phase_index - 1
    if run is None and not 0 <= chosen < phase_index:
        (phase or node).fail(
            f"a replay from this run must name an earlier phase than this one ({phase_index}), "
            f"got {'none' if index is None else index}.",
            "Name an earlier 'phase', or the 'experiment_run' the steps were recorded in.",
        )
    return ReplaySpec(
        agent=as_name(agent) if agent is not None else None,
        experiment_run=as_name(run) if run is not None else None,
        phase=max(chosen, 0),
        instance=as_str(instance) if instance is not None else None,
        repeat=as_int(repeat, minimum=1, maximum=1000) if repeat is not None else 1,
        key=node.key,
        line=node.line,
    )
