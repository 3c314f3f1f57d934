"""The EnvironmentConductor: starts one process of its environment for every worker."""

from __future__ import annotations

import msgspec

from palaestra.core.description import names
from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.supervision.conductor import Conductor
from palaestra.core.wire import messages as m
from palaestra.environment.environment_process import EnvironmentProcess


class EnvironmentArgs(msgspec.Struct, frozen=True, kw_only=True):
    """The arguments of :class:`EnvironmentProcess`, besides its name."""

    environment: EnvironmentSpec
    environment_id: int
    phase_id: int
    worker: int
    seed: int
    store_endpoint: str | None
    answer_timeout: float
    run_uid: str = ""
    instance_uid: str = ""
    phase_index: int = 0
    data_path: str = ""
    record_every: int = 1
    lane_seeds: list[int] = []


class EnvironmentConductor(Conductor):
    async def setup(self, request: m.EnvironmentSetup) -> m.EnvironmentsReady:
        uid = request.environment.uid
        games = request.envs_per_worker
        self.children = [
            self.runtime.spawn(
                names.environment(uid, worker),
                "Environment",
                EnvironmentProcess,
                EnvironmentArgs(
                    environment=request.environment,
                    environment_id=request.environment_id,
                    phase_id=request.phase_id,
                    worker=worker,
                    seed=request.seeds[worker * games],
                    store_endpoint=self.store_endpoint,
                    answer_timeout=request.answer_timeout,
                    run_uid=request.run_uid,
                    instance_uid=request.instance_uid,
                    phase_index=request.phase_index,
                    data_path=request.data_path,
                    record_every=request.record_every,
                    lane_seeds=(
                        request.seeds[worker * games : (worker + 1) * games] if games > 1 else []
                    ),
                ),
                worker=worker,
            )
            for worker in range(request.workers)
        ]
        endpoints = await self.runtime.wait_ready(
            self.children, self.start_timeout, "start_timeout"
        )
        return m.EnvironmentsReady(uid=uid, endpoints=[e["env"] for e in endpoints])
