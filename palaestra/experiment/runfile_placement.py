"""The run file's placement keys, read for runs on a Ray cluster (runtime config ``backend:
ray``; a local run ignores them).

```yaml
run_config:
  placement: {strategy: SPREAD, num_cpus: 0.5}   # PACK (default), SPREAD, STRICT_PACK, ...
schedule:
  - phase_0:
      agents:
        - name: learner
          resources: {brain: {num_gpus: 1}, muscle: {num_cpus: 1}}
```
"""

from __future__ import annotations

from palaestra.core.description.specs import PLACEMENT_STRATEGIES, PlacementSpec, Resources
from palaestra.experiment.runfile_schema import Node, as_mapping, describe, optional

__all__ = ["agent_resources", "placement_spec"]

_PLACEMENT_KEYS = ("strategy", "num_cpus")
_RESOURCE_KEYS = ("num_cpus", "num_gpus")
_PROCESSES = ("brain", "muscle")


def placement_spec(node: Node | None) -> PlacementSpec:
    """``run_config.placement``: a strategy and the CPUs each process reserves by default."""
    if node is None:
        return PlacementSpec()
    fields = as_mapping(node, allowed=_PLACEMENT_KEYS)
    spec = PlacementSpec()
    strategy = optional(fields, "strategy")
    if strategy is not None:
        value = strategy.value
        if not isinstance(value, str) or value.upper() not in PLACEMENT_STRATEGIES:
            strategy.fail(
                f"expected one of {', '.join(PLACEMENT_STRATEGIES)}, got {describe(value)}.",
                "PACK puts the processes on as few nodes as it can, SPREAD on as many.",
            )
        spec = PlacementSpec(strategy=value.upper(), num_cpus=spec.num_cpus)
    cpus = optional(fields, "num_cpus")
    if cpus is not None:
        spec = PlacementSpec(strategy=spec.strategy, num_cpus=_amount(cpus, positive=True))
    return spec


def agent_resources(node: Node | None) -> tuple[Resources | None, Resources | None]:
    """An agent's ``resources``: what its Brain and each of its Muscles reserve on a node."""
    if node is None:
        return None, None
    fields = as_mapping(node, allowed=_PROCESSES)
    found: dict[str, Resources] = {}
    for process in _PROCESSES:
        entry = optional(fields, process)
        if entry is None:
            continue
        amounts = as_mapping(entry, allowed=_RESOURCE_KEYS)
        cpus = optional(amounts, "num_cpus")
        gpus = optional(amounts, "num_gpus")
        found[process] = Resources(
            num_cpus=None if cpus is None else _amount(cpus, positive=True),
            num_gpus=0.0 if gpus is None else _gpus(gpus),
        )
    return found.get("brain"), found.get("muscle")


def _amount(node: Node, *, positive: bool) -> float:
    value = node.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value > 0 or (value == 0 and not positive):
            return float(value)
    expected = "a number > 0" if positive else "a number >= 0"
    node.fail(f"expected {expected}, got {describe(value)}.")


def _gpus(node: Node) -> float:
    """GPUs: a fraction of one (processes share it) or a whole number, as Ray takes them."""
    amount = _amount(node, positive=False)
    if amount > 1 and not amount.is_integer():
        node.fail(f"expected a fraction of one GPU or a whole number of GPUs, got {amount:g}.")
    return amount
