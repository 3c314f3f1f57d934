"""The common part of the conductors: they start a phase's children on a setup request.

A conductor is not a process of its own. It runs in the executor, which imported every plug-in
module of the run while it checked the run file, so the Brains, Muscles and environments it
forks share those modules just as well; a process per conductor would only cost its memory
(about 37 MiB of resident pages each) and its start on every phase's critical path. The
children report to the executor's runtime; the conductor knows which of them are its own.
"""

from __future__ import annotations

from typing import Any

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0


class Conductor:
    """Spawns children through ``runtime`` when its setup request arrives."""

    def __init__(self, name: str, runtime: Any, *, store_endpoint: str | None) -> None:
        self.name = name
        self.runtime = runtime
        self.store_endpoint = store_endpoint
        self.children: list[Any] = []

    def of_role(self, role: str) -> list[Any]:
        """This conductor's children of ``role``."""
        return [c for c in self.children if c.spec.role == role]
