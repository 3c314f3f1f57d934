"""The EnvironmentConductor: starts one process of its environment for every worker."""

from __future__ import annotations

from typing import Any

from palaestra.core import messages as m
from palaestra.core.esm import Component, on
from palaestra.core.processes import warm_forkserver

START_TIMEOUT = 60.0


class EnvironmentConductor(Component):
    def __init__(self, name: str, *, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.store_endpoint = store_endpoint

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        warm_forkserver()
        return {}

    @on(m.EnvironmentSetup)
    async def handle_setup(self, request: m.EnvironmentSetup) -> m.EnvironmentsReady:
        uid = request.environment.uid
        children = [
            self.runtime.spawn(
                f"Environment-{uid}-{worker}",
                "Environment",
                "palaestra.environment.environment_process:EnvironmentProcess",
                {
                    "environment": request.environment,
                    "environment_id": request.environment_id,
                    "worker": worker,
                    "seed": request.seeds[worker],
                    "store_endpoint": self.store_endpoint,
                },
            )
            for worker in range(request.workers)
        ]
        endpoints = await self.runtime.wait_ready(children, START_TIMEOUT)
        return m.EnvironmentsReady(uid=uid, endpoints=[e["env"] for e in endpoints])
