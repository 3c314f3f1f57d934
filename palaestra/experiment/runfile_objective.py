"""palaestrAI's AgentObjectiveTerminationCondition in a run file: its ``brain_avgN`` rules.

Named under a phase's ``simulation.conditions`` with params ``{<agent name>: {brain_avgN: X}}``,
it ends a worker's episode once the mean of that agent's last ``N`` objective values reaches
``X``. The rules go to the agent's :class:`~palaestra.core.specs.AgentSpec`
(``objective_stop``): each Muscle checks them as it computes its objective, and a Muscle whose
agent reached one makes its environments report that step as the episode's last. Its
phase-level rules (``phase_avgN``, under ``run_config``) are not offered yet.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from palaestra.core.errors import did_you_mean
from palaestra.core.specs import AgentSpec
from palaestra.experiment.runfile_schema import Node, as_list, as_mapping, describe

CONDITION = "AgentObjectiveTerminationCondition"
_RULE = re.compile(r"(brain|phase)_avg(\d+)\Z")
PHASE_LEVEL = (
    "Its phase-level rules (phase_avgN) are not offered yet: name it under a phase's "
    "simulation.conditions, where its brain_avgN rules end episodes, and end phases with "
    "palaestra.experiment:MaxEpisodesTerminationCondition."
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
            rules.setdefault(agent, {}).update(_brain_rules(node))
    if not rules:
        return agents
    return tuple(
        msgspec.structs.replace(agent, objective_stop=rules[agent.name])
        if agent.name in rules
        else agent
        for agent in agents
    )


def _brain_rules(node: Node) -> dict[int, float]:
    if not isinstance(node.value, dict):
        node.fail(f"expected a mapping like {{brain_avg10: 0.9}}, got {describe(node.value)}.")
    rules: dict[int, float] = {}
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
        if window < 1 or isinstance(value, bool) or not isinstance(value, int | float):
            child.fail(f"expected a number and N >= 1, got {key}: {describe(value)}.")
        if match.group(1) == "brain":
            rules[window] = float(value)
    return rules
