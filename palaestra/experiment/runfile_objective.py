"""palaestrAI's AgentObjectiveTerminationCondition in a run file: its ``brain_avgN`` and
``phase_avgN`` rules.

Named under a phase's ``simulation.conditions`` with params ``{<agent name>: {brain_avgN: X}}``,
it ends a worker's episode once the mean of that agent's last ``N`` objective values reaches
``X``. The rules go to the agent's :class:`~palaestra.core.description.specs.AgentSpec`
(``objective_stop``): each Muscle checks them as it computes its objective, and a Muscle whose
agent reached one makes its environments report that step as the episode's last.

Named as the run's condition (``run_config.condition``) with ``{<agent name>: {phase_avgN:
X}}``, it ends a phase (see :mod:`palaestra.agent.phase_stop`): the rules go to the agent's
``phase_stop`` in every phase, its Brain checks them at the end of each episode, and the
workers run no further episode once one holds (nor more than the phase's ``episodes``).
``brain_avgN`` rules there are not read, as in palaestrAI.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from palaestra.core.description.specs import AgentSpec, PhaseSpec
from palaestra.core.errors import did_you_mean
from palaestra.experiment.runfile_schema import Node, as_list, as_mapping, describe

CONDITION = "AgentObjectiveTerminationCondition"
_RULE = re.compile(r"(brain|phase)_avg(\d+)\Z")
NO_PHASE_RULE = (
    "As the run's condition it ends phases by phase_avgN rules ({<agent>: {phase_avg10: "
    "0.9}}); brain_avgN rules end episodes under a phase's simulation.conditions."
)


def is_objective_condition(name: str) -> bool:
    """Whether ``module:Class`` names palaestrAI's (or palaestra's) objective condition."""
    module, _, cls = name.partition(":")
    return cls == CONDITION and module.split(".")[0] in ("palaestra", "palaestrai")


def with_objective_stops(agents: tuple[AgentSpec, ...], conditions: Node) -> tuple[AgentSpec, ...]:
    """``agents`` with the ``brain_avgN`` rules of the objective conditions among
    ``conditions`` (a phase's ``simulation.conditions`` node)."""
    rules: dict[str, dict[int, float]] = {}
    names = [agent.name for agent in agents]
    for item in as_list(conditions):
        fields = as_mapping(item, allowed=("name", "params"))
        if not is_objective_condition(str(fields["name"].value)):
            continue
        params = fields.get("params")
        if params is None or params.value is None:
            continue
        for agent, node in as_mapping(params, allowed=names).items():
            rules.setdefault(agent, {}).update(_rules(node)[0])
    return _with_rules(agents, "objective_stop", rules)


def phase_rules(condition: Node, names: list[str]) -> dict[str, dict[int, float]]:
    """The ``phase_avgN`` rules of the run's objective condition, by agent name.

    Raises:
        RunFileError: An agent is not in any phase, a rule is malformed, or there is no
            ``phase_avgN`` rule at all.
    """
    fields = as_mapping(condition, allowed=("name", "params"))
    params = fields.get("params")
    rules: dict[str, dict[int, float]] = {}
    if params is not None and params.value is not None:
        for agent, node in as_mapping(params, allowed=names).items():
            phase = _rules(node)[1]
            if phase:
                rules[agent] = phase
    if not rules:
        (params or fields["name"]).fail(
            "AgentObjectiveTerminationCondition names no phase_avgN rule.", NO_PHASE_RULE
        )
    return rules


def with_phase_stops(
    phases: tuple[PhaseSpec, ...], rules: dict[str, dict[int, float]]
) -> tuple[PhaseSpec, ...]:
    """``phases`` with each agent's phase rules (``phase_stop``)."""
    return tuple(
        msgspec.structs.replace(phase, agents=_with_rules(phase.agents, "phase_stop", rules))
        for phase in phases
    )


def _with_rules(
    agents: tuple[AgentSpec, ...], field: str, rules: dict[str, dict[int, float]]
) -> tuple[AgentSpec, ...]:
    """``agents`` with ``rules[name]`` as ``field`` where they have rules."""
    return tuple(
        msgspec.structs.replace(agent, **{field: rules[agent.name]})
        if agent.name in rules
        else agent
        for agent in agents
    )


def _rules(node: Node) -> tuple[dict[int, float], dict[int, float]]:
    """The ``brain_avgN`` and the ``phase_avgN`` rules of one agent."""
    if not isinstance(node.value, dict):
        node.fail(f"expected a mapping like {{brain_avg10: 0.9}}, got {describe(node.value)}.")
    rules: dict[int, float] = {}
    phase: dict[int, float] = {}
    children: dict[Any, Node] = node.value
    for key, child in children.items():
        match = _RULE.match(str(key))
        if match is None:
            child.fail(
                f"unknown rule {key!r}: expected brain_avgN or phase_avgN (N a number of steps "
                "or episodes).",
                did_you_mean(str(key), ["brain_avg10", "phase_avg10"]),
            )
        window = int(match.group(2))
        value = child.value
        if (
            window < 1
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or math.isnan(value)  # (no mean reaches it: the rule would never end anything)
        ):
            child.fail(f"expected a number and N >= 1, got {key}: {describe(value)}.")
        (rules if match.group(1) == "brain" else phase)[window] = float(value)
    return rules, phase
