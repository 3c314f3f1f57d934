"""The AgentConductor: on its setup request, spawns one Brain and one Muscle per worker.

The conductor imports the agent's own plug-in modules when it starts and forks its children
from itself, so a heavy user import (torch, say) happens once per agent, not once per process.
The Brain's endpoint is derived from its name, so the Brain and the Muscles start at the same
time (ZMQ connects before the bind).
"""

from __future__ import annotations

from palaestra.core import messages as m
from palaestra.core.conductor import START_TIMEOUT, STOP_TIMEOUT, Conductor
from palaestra.core.esm import on
from palaestra.core.transport import endpoint_for


class AgentConductor(Conductor):
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
                        "answer_timeout": request.answer_timeout,
                        "update_lag": request.update_lag,
                        "environments": request.environments[worker],
                    },
                )
            )
        endpoints = await runtime.wait_ready(children, START_TIMEOUT)
        if endpoints[0]["brain"] != brain_endpoint:
            raise RuntimeError(f"{brain_name} bound {endpoints[0]['brain']}, not {brain_endpoint}")
        return m.AgentsReady(name=agent, endpoints=[e["muscle"] for e in endpoints[1:]])

    async def close(self) -> None:
        """Stop the Muscles first (they flush), then the Brain (it dumps its last state)."""
        runtime = self.runtime
        muscles = [c for c in runtime.supervisor.running() if c.spec.role == "Muscle"]
        for group in (muscles, runtime.supervisor.running()):
            if await runtime.shutdown_children(group, "phase over", STOP_TIMEOUT):
                await runtime.supervisor.stop_all()
