"""The AgentConductor: on its setup request, spawns one Brain and one Muscle per worker.

The children are forked from the executor, which imported the agent's plug-in modules while it
checked the run file: a heavy user import (torch, say) happens once per run, not once per
process (unless the run's start method is forkserver or spawn: see
:mod:`palaestra.core.supervision.start_methods`). The Brain's endpoint is derived from its name, so
the Brain and the Muscles start at the same time (a Muscle links to its Brain when its first
episode begins). In a run across hosts (:mod:`palaestra.core.wire.netlink`) the Brain's tcp
endpoint is known only once it is up, so the Muscles start then.
"""

from __future__ import annotations

import msgspec

from palaestra.agent.brain_process import BrainProcess
from palaestra.agent.muscle_process import MuscleProcess
from palaestra.core.description import names
from palaestra.core.description.specs import AgentSpec
from palaestra.core.supervision.conductor import Conductor
from palaestra.core.wire import messages as m
from palaestra.core.wire.transport import endpoint_for


class BrainArgs(msgspec.Struct, frozen=True, kw_only=True):
    """The arguments of :class:`BrainProcess`, besides its name."""

    setup: m.AgentSetup
    store_endpoint: str | None


class MuscleArgs(msgspec.Struct, frozen=True, kw_only=True):
    """The arguments of :class:`MuscleProcess`, besides its name."""

    agent: AgentSpec
    agent_id: int
    phase_id: int
    worker: int
    mode: str
    seed: int
    brain_endpoint: str
    store_endpoint: str | None
    sensors: list[m.InfoDesc]
    actuators: list[m.InfoDesc]
    answer_timeout: float
    update_lag: int
    environments: dict[str, str]
    record_every: int = 1
    dumps: dict[str, bytes] = {}
    dump_source: str = ""


class AgentConductor(Conductor):
    async def setup(self, request: m.AgentSetup) -> m.AgentsReady:
        runtime = self.runtime
        agent = request.agent.name
        brain_name = names.brain(agent)
        brain_endpoint = endpoint_for(runtime.run_dir, names.endpoint(brain_name, "brain"))
        children = [
            runtime.spawn(
                brain_name,
                "Brain",
                BrainProcess,
                BrainArgs(setup=request, store_endpoint=self.store_endpoint),
                worker=0 if request.workers == 1 else None,  # (it serves every worker)
            )
        ]
        if runtime.network is not None:  # its tcp endpoint is known once it is up
            (ready,) = await runtime.wait_ready(children, self.start_timeout, "start_timeout")
            brain_endpoint = ready["brain"]
        for worker in range(request.workers):
            children.append(
                runtime.spawn(
                    names.muscle(agent, worker),
                    "Muscle",
                    MuscleProcess,
                    MuscleArgs(
                        agent=request.agent,
                        agent_id=request.agent_id,
                        phase_id=request.phase_id,
                        worker=worker,
                        mode=request.mode,
                        seed=request.muscle_seeds[worker],
                        brain_endpoint=brain_endpoint,
                        store_endpoint=self.store_endpoint,
                        sensors=request.sensors,
                        actuators=request.actuators,
                        answer_timeout=request.answer_timeout,
                        update_lag=request.update_lag,
                        record_every=request.record_every,
                        environments=request.environments[worker],
                        dumps=request.dumps,
                        dump_source=request.dump_source,
                    ),
                    worker=worker,
                )
            )
        self.children = children
        endpoints = await runtime.wait_ready(children, self.start_timeout, "start_timeout")
        if runtime.network is None and endpoints[0]["brain"] != brain_endpoint:
            raise RuntimeError(f"{brain_name} bound {endpoints[0]['brain']}, not {brain_endpoint}")
        return m.AgentsReady(name=agent, endpoints=[e["muscle"] for e in endpoints[1:]])
