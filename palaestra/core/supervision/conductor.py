"""The common part of the conductors: they start a phase's children on a setup request.

A conductor is not a process of its own. It runs in the executor, which imported every plug-in
module of the run while it checked the run file, so the Brains, Muscles and environments it
forks share those modules just as well; a process per conductor would only cost its memory
(about 37 MiB of resident pages each) and its start on every phase's critical path. The
children report to the executor's runtime; the conductor knows which of them are its own.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

from palaestra.core.supervision.processes import Child
from palaestra.core.supervision.runtime import Runtime


@dataclass(eq=False)
class Conductor:
    """Spawns children through ``runtime`` when its setup request arrives.

    Args:
        name: The conductor's name (for messages; it is not a process).
        runtime: The executor's runtime, which forks and supervises the children.
        store_endpoint: Where the children send their rows (None: no store).
        start_timeout: Seconds the children may take to start (construct their plug-ins).
    """

    name: str
    runtime: Runtime
    _: KW_ONLY
    store_endpoint: str | None
    start_timeout: float
    children: list[Child] = field(default_factory=list, init=False)

    def of_role(self, role: str) -> list[Child]:
        """This conductor's children of ``role``."""
        return [c for c in self.children if c.spec.role == role]
