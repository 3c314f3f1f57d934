"""The AgentConductor: on its setup request, spawns one Brain and one Muscle per worker.

The conductor's forkserver preloads the agent's own plug-in modules, so a heavy user import
(torch, say) happens once per agent, not once per process. The Brain's endpoint is derived from
its name, so the Brain and the Muscles start at the same time (ZMQ connects before the bind).
"""

from __future__ import annotations

from typing import Any

from palaestra.core import messages as m
from palaestra.core.esm import Component, on
from palaestra.core.processes import warm_forkserver
from palaestra.core.transport import endpoint_for

START_TIMEOUT = 60.0


class AgentConductor(Component):
    def __init__(self, name: str, *, store_endpoint: str | None) -> None:
        super().__init__(name)
        self.store_endpoint = store_endpoint

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        warm_forkserver()
        return {}

    @on(m.AgentSetup)
    async def handle_setup(self, request: m.AgentSetup) -> m.AgentsReady:
        runtime = self.runtime
        agent = request.agent.name
        brain_name = f"Brain-{agent}"
        brain_endpoint = endpoint_for(runtime.run_dir, f"{brain_name}-brain")
        children = [
            runtime.spawn(
                brain_name,
                "Brain",
                "palaestra.agent.brain_process:BrainProcess",
                {"setup": request, "store_endpoint": self.store_endpoint},
            )
        ]
        for worker in range(request.workers):
            children.append(
                runtime.spawn(
                    f"Muscle-{agent}-{worker}",
                    "Muscle",
                    "palaestra.agent.muscle_process:MuscleProcess",
                    {
                        "agent": request.agent,
                        "agent_id": request.agent_id,
                        "worker": worker,
                        "mode": request.mode,
                        "seed": request.muscle_seeds[worker],
                        "brain_endpoint": brain_endpoint,
                        "store_endpoint": self.store_endpoint,
                        "sensors": request.sensors,
                        "actuators": request.actuators,
                    },
                )
            )
        endpoints = await runtime.wait_ready(children, START_TIMEOUT)
        if endpoints[0]["brain"] != brain_endpoint:
            raise RuntimeError(f"{brain_name} bound {endpoints[0]['brain']}, not {brain_endpoint}")
        return m.AgentsReady(name=agent, endpoints=[e["muscle"] for e in endpoints[1:]])

    @on(m.Shutdown)
    async def handle_shutdown(self, message: m.Shutdown) -> None:
        """Stop the Muscles first (they flush), then the Brain (it dumps), then ourselves."""
        self.stop(message.reason)
        runtime = self.runtime
        muscles = [c for c in runtime.supervisor.running() if c.spec.role == "Muscle"]
        await _shutdown(runtime, muscles)
        await _shutdown(runtime, runtime.supervisor.running())
        self.finish()


async def _shutdown(runtime: Any, children: list[Any]) -> None:
    for child in children:
        child.stopping = True
        await runtime.send_child(child.name, m.Shutdown(reason="phase over"))
    if not await runtime.supervisor.wait(children, 10.0):
        await runtime.supervisor.stop_all()
