"""The EnvironmentConductor: starts one process of its environment for every worker."""

from __future__ import annotations

from palaestra.core import messages as m
from palaestra.core.conductor import START_TIMEOUT, Conductor


class EnvironmentConductor(Conductor):
    async def setup(self, request: m.EnvironmentSetup) -> m.EnvironmentsReady:
        uid = request.environment.uid
        self.children = [
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
                    "answer_timeout": request.answer_timeout,
                },
            )
            for worker in range(request.workers)
        ]
        endpoints = await self.runtime.wait_ready(self.children, START_TIMEOUT)
        return m.EnvironmentsReady(uid=uid, endpoints=[e["env"] for e in endpoints])
