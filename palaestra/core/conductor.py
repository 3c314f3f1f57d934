"""The common part of the conductors: a component that starts children on a setup request."""

from __future__ import annotations

from typing import Any

from palaestra.core.esm import Component

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0


class Conductor(Component):
    """Spawns children when its setup request arrives, forking them straight from itself
    (it imported their modules at start, so they share them)."""

    def __init__(self, name: str, *, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.store_endpoint = store_endpoint

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        return {}
