"""The common part of the conductors: a component that starts children on a setup request."""

from __future__ import annotations

from typing import Any

from palaestra.core.esm import Component
from palaestra.core.processes import warm_forkserver

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0


class Conductor(Component):
    """Starts its forkserver at once, so the imports overlap with the rest of the phase's
    start-up, and spawns children when its setup request arrives."""

    def __init__(self, name: str, *, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.store_endpoint = store_endpoint

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        warm_forkserver()
        return {}
