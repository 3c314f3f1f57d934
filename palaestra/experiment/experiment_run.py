"""The ExperimentRun controller: walks the phases of a run and supervises all their processes.

Per phase it asks an environment conductor per environment and an agent conductor per agent
(see :mod:`palaestra.core.conductor`) to start their processes, and starts one simulation
controller per worker; it wires them together (environments first, because agents are set up
with the spaces the environments report), runs the episodes, shuts the phase down in order
(controllers, then Muscles before Brains, then environments), and waits until the store writer
holds everything the phase produced before the next phase may load its brain dumps.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from typing import Any

from palaestra import __version__
from palaestra.agent.conductor import AgentConductor
from palaestra.core import messages as m
from palaestra.core.esm import Component, State
from palaestra.core.processes import preload
from palaestra.core.runtime import ComponentFailed, timeout_error
from palaestra.core.seeds import derive_seed
from palaestra.core.specs import AgentSpec, PhaseSpec, RunSpec
from palaestra.environment.conductor import EnvironmentConductor
from palaestra.experiment.provenance import code_revision, package_versions
from palaestra.experiment.store_client import (
    WRITER,
    NullStore,
    WriterClient,
    dump_dir,
    store_enabled,
)

LOG = logging.getLogger(__name__)

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
END_TIMEOUT = 3.0  # an interrupted run must be over within seconds; Brains may be dumping
FAILED_END_TIMEOUT = 1.5  # a failed run: what does not stop by then is broken, kill it


class PhaseError(Exception):
    pass


class ExperimentRun(Component):
    """Runs one :class:`RunSpec` to its end; the executor's top component."""

    def __init__(
        self,
        name: str,
        *,
        run: RunSpec,
        store_uri: str,
        data_path: str = "_outputs",
        answer_timeout: float = 300.0,
    ) -> None:
        super().__init__(name)
        self.answer_timeout = answer_timeout
        self.run = run
        self.store_uri = store_uri
        self.data_path = data_path
        self.instance_uid = str(uuid.uuid4())
        self.instance_id: int | None = None
        self.signal: int | None = None
        self.store_endpoint: str | None = None
        self.store: WriterClient | NullStore = NullStore(data_path)
        self._main: asyncio.Task[None] | None = None

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        self._main = runtime.start_task(self._run())
        return {}

    # --- the run -----------------------------------------------------------------------

    async def _run(self) -> None:
        if store_enabled(self.store_uri):
            writer = self.runtime.spawn(
                WRITER,
                "StoreWriter",
                "palaestra.store.writer:StoreWriter",
                {"store_uri": self.store_uri},
            )
            (endpoints,) = await self.runtime.wait_ready([writer], START_TIMEOUT)
            self.store_endpoint = endpoints["store"]
            self.store = WriterClient(self.runtime)
        ids = await self._store(
            m.StoreRunStart(
                experiment_uid=self.run.experiment_uid,
                run_uid=self.run.uid,
                instance_uid=self.instance_uid,
                document=self.run.document,
                file=self.run.path,
                seed=self.run.seed,
                palaestra_version=__version__,
                host=socket.gethostname(),
                package_versions=package_versions(),
                code_revision=code_revision(self.run.path) if self.run.path else None,
            )
        )
        self.instance_id = ids.ids["instance"]
        for phase in self.run.phases:
            LOG.info("phase %d (%s) begins", phase.index, phase.name)
            await self._run_phase(phase)
        await self._store(m.StoreRunEnd(instance_id=self.instance_id, status="finished"))
        self.finish()

    async def _store(self, request: m.Msg) -> Any:
        return await self.store.ask(request)

    async def _run_phase(self, phase: PhaseSpec) -> None:
        rt = self.runtime
        run = self.run
        workers = phase.config.worker
        env_seeds = {
            e.uid: [
                derive_seed(run.seed, "environment", e.uid, phase.index, w) for w in range(workers)
            ]
            for e in phase.environments
        }
        dumps = {a.name: await self._find_dump(phase, a) for a in phase.agents}
        ids = (
            await self._store(
                m.StorePhaseStart(
                    instance_id=self.instance_id or 0,
                    index=phase.index,
                    name=phase.name,
                    mode=phase.config.mode,
                    workers=workers,
                    episodes=phase.config.episodes,
                    config={"simulation": phase.simulation.name, **_plain(phase.config)},
                    environments=[
                        m.PhaseEnvironment(
                            uid=e.uid, name=e.name, params=dict(e.params), seeds=env_seeds[e.uid]
                        )
                        for e in phase.environments
                    ],
                    agents=[self._phase_agent(phase, a, dumps[a.name][0]) for a in phase.agents],
                )
            )
        ).ids
        # the children are forked from here: import their plug-ins once, here (checking the
        # run file usually did already)
        preload([_module(e.name) for e in phase.environments])
        preload([_module(c.name) for a in phase.agents for c in (a.brain, a.muscle, a.objective)])
        env_conductors = [
            EnvironmentConductor(
                f"EnvironmentConductor-{e.uid}", rt, store_endpoint=self.store_endpoint
            )
            for e in phase.environments
        ]
        agent_conductors = [
            AgentConductor(f"AgentConductor-{a.name}", rt, store_endpoint=self.store_endpoint)
            for a in phase.agents
        ]
        conditions = [*phase.simulation.conditions, *run.conditions]
        controllers = [
            rt.spawn(
                f"SimulationController-{w}",
                "SimulationController",
                phase.simulation.name,
                {
                    "worker": w,
                    "conditions": conditions,
                    "params": dict(phase.simulation.params),
                    "answer_timeout": self.answer_timeout,
                },
            )
            for w in range(workers)
        ]
        try:
            env_ready = await asyncio.gather(
                *(
                    c.setup(
                        m.EnvironmentSetup(
                            environment=e,
                            environment_id=ids[f"environment:{e.uid}"],
                            workers=workers,
                            seeds=env_seeds[e.uid],
                            answer_timeout=self.answer_timeout,
                        ),
                    )
                    for c, e in zip(env_conductors, phase.environments, strict=True)
                )
            )
            await rt.wait_ready(controllers, START_TIMEOUT)
            baselines = await asyncio.gather(
                *(
                    rt.request(
                        c.name,
                        m.SimulationSetup(
                            environments=[
                                m.EnvironmentEndpoint(uid=r.uid, endpoint=r.endpoints[w])
                                for r in env_ready
                            ]
                        ),
                    )
                    for w, c in enumerate(controllers)
                )
            )
            sensors = {s.uid: s for s in baselines[0].sensors}
            actuators = {a.uid: a for a in baselines[0].actuators}
            for agent in phase.agents:
                _check_agent(phase, agent, sensors, actuators)
            agents_ready = await asyncio.gather(
                *(
                    c.setup(
                        self._agent_setup(
                            phase,
                            a,
                            ids,
                            dumps[a.name][1],
                            sensors,
                            actuators,
                            _by_worker(env_ready, workers),
                        ),
                    )
                    for c, a in zip(agent_conductors, phase.agents, strict=True)
                )
            )
            await asyncio.gather(
                *(
                    rt.request(
                        c.name,
                        m.SimulationRun(
                            agents=[
                                m.AgentEndpoint(
                                    name=a.name,
                                    endpoint=r.endpoints[w],
                                    sensors=list(a.sensors),
                                    actuators=list(a.actuators),
                                )
                                for a, r in zip(phase.agents, agents_ready, strict=True)
                            ],
                            episodes=phase.config.episodes,
                            mode=phase.config.mode,
                        ),
                    )
                    for w, c in enumerate(controllers)
                )
            )
        except PhaseError as exc:
            raise ComponentFailed(
                m.ErrorInfo(process=self.name, kind="InvalidRun", message=str(exc))
            ) from None
        muscles = [x for c in agent_conductors for x in c.of_role("Muscle")]
        brains = [b for c in agent_conductors for b in c.of_role("Brain")]
        environments = [e for c in env_conductors for e in c.children]
        for group in (controllers, muscles, brains, environments):
            await self._shutdown(group)
        producers = [f"Brain-{a.name}" for a in phase.agents]
        producers += [f"Muscle-{a.name}-{w}" for a in phase.agents for w in range(workers)]
        producers += [
            f"Environment-{e.uid}-{w}" for e in phase.environments for w in range(workers)
        ]
        await asyncio.wait_for(self._store(m.StoreFlush(producers=producers)), STOP_TIMEOUT)
        await self._store(m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))

    async def _shutdown(self, children: list[Any]) -> None:
        late = await self.runtime.shutdown_children(children, "phase over", STOP_TIMEOUT)
        if late:
            raise timeout_error(late, "stop", STOP_TIMEOUT)

    # --- agents ------------------------------------------------------------------------

    def _phase_agent(
        self, phase: PhaseSpec, agent: AgentSpec, loaded_from: dict[str, Any] | None
    ) -> m.PhaseAgent:
        return m.PhaseAgent(
            name=agent.name,
            brain=agent.brain.name,
            muscle=agent.muscle.name,
            objective=agent.objective.name,
            config={
                "brain_params": dict(agent.brain.params),
                "muscle_params": dict(agent.muscle.params),
                "objective_params": dict(agent.objective.params),
                "sensors": list(agent.sensors),
                "actuators": list(agent.actuators),
            },
            seeds={
                "brain": self._brain_seed(phase, agent),
                "muscles": self._muscle_seeds(phase, agent),
            },
            loaded_from=loaded_from,
        )

    def _brain_seed(self, phase: PhaseSpec, agent: AgentSpec) -> int:
        return derive_seed(self.run.seed, "brain", agent.name, phase.index)

    def _muscle_seeds(self, phase: PhaseSpec, agent: AgentSpec) -> list[int]:
        return [
            derive_seed(self.run.seed, "muscle", agent.name, phase.index, w)
            for w in range(phase.config.worker)
        ]

    def _agent_setup(
        self,
        phase: PhaseSpec,
        agent: AgentSpec,
        ids: dict[str, int],
        dump: bytes | None,
        sensors: dict[str, m.InfoDesc],
        actuators: dict[str, m.InfoDesc],
        environments: list[dict[str, str]],
    ) -> m.AgentSetup:
        return m.AgentSetup(
            agent=agent,
            agent_id=ids[f"agent:{agent.name}"],
            run_uid=self.run.uid,
            phase_index=phase.index,
            phase_name=phase.name,
            mode=phase.config.mode,
            workers=phase.config.worker,
            brain_seed=self._brain_seed(phase, agent),
            muscle_seeds=self._muscle_seeds(phase, agent),
            sensors=[sensors[uid] for uid in agent.sensors],
            actuators=[actuators[uid] for uid in agent.actuators],
            dump=dump,
            answer_timeout=self.answer_timeout,
            update_lag=phase.config.update_lag,
            environments=environments,
            dump_dir=dump_dir(
                self.data_path, self.run.uid, self.instance_uid, phase.index, phase.name
            ),
        )

    async def _find_dump(
        self, phase: PhaseSpec, agent: AgentSpec
    ) -> tuple[dict[str, Any] | None, bytes | None]:
        """Which dump the agent starts from: ``load:``, else the same agent one phase earlier."""
        load = agent.load
        if load is None and phase.index == 0:
            return None, None
        run_uid = load.experiment_run if load and load.experiment_run else self.run.uid
        agent_name = load.agent if load and load.agent else agent.name
        index = load.phase if load and load.phase is not None else phase.index - 1
        source: dict[str, Any] = {"run": run_uid, "agent": agent_name, "phase": index}
        if index < 0:
            return None, None
        found: m.StoreDump = await self._store(
            m.StoreFindDump(run_uid=run_uid, agent=agent_name, phase=index)
        )
        if found.dump is None:
            message = (
                f"agent '{agent.name}' in phase {phase.index}: no brain dump of agent "
                f"'{source['agent']}' in phase {source['phase']} of run '{source['run']}'"
            )
            if load is not None and load.strict:
                raise ComponentFailed(
                    m.ErrorInfo(process=self.name, kind="MissingBrainDump", message=message)
                )
            if load is not None:
                LOG.warning("%s; it starts fresh", message)
            return None, None
        LOG.info(
            "agent '%s' in phase %d starts from the dump of agent '%s' in phase %d (%s)",
            agent.name,
            phase.index,
            source["agent"],
            source["phase"],
            f"brain_states {found.brain_state_id}" if found.brain_state_id else "dump file",
        )
        return {**source, "brain_state_id": found.brain_state_id}, found.dump

    # --- ending ------------------------------------------------------------------------

    def on_signal(self, signum: int) -> None:
        if self.signal is None:
            self.signal = signum
            import signal as _signal

            self.stop(f"interrupted by {_signal.Signals(signum).name}")
            if self._main is not None:
                self._main.cancel()
            self.finish()

    async def teardown(self) -> None:
        """End in order: the phase's processes stop first (Muscles and environments flush, Brains
        dump once), then the end of the run is recorded; the runtime then stops the writer."""
        if self._main is not None and not self._main.done():
            self._main.cancel()
        rt = self.runtime
        others = [c for c in rt.supervisor.running() if c.name != WRITER]
        if others:
            reason = self.stop_reason or "the run failed"
            timeout = END_TIMEOUT if self.state is not State.ERROR else FAILED_END_TIMEOUT
            if await rt.shutdown_children(others, reason, timeout):
                await rt.supervisor.stop_all(children=others, grace=1.0)
        if self.instance_id is None or (self.state is State.FINISHED and self.signal is None):
            return
        if self.signal is not None:
            status, reason = "cancelled", self.stop_reason
        else:
            status = "error"
            reason = self.error.describe() if self.error is not None else "unknown error"
        await self._record_end(status, reason)

    async def _record_end(self, status: str, reason: str) -> None:
        """Through the writer if it is alive, else straight into the store."""
        if not isinstance(self.store, WriterClient):
            return
        writer = self.runtime.supervisor.children.get(WRITER)
        if writer is not None and not writer.exited.is_set():
            request = m.StoreRunEnd(
                instance_id=self.instance_id or 0, status=status, reason=reason
            )
            try:
                await asyncio.wait_for(self._store(request), 3.0)
                return
            except (TimeoutError, ComponentFailed) as exc:
                LOG.warning("the store writer did not record the end of the run: %r", exc)
        from palaestra.store.direct import record_run_end

        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(
                None, record_run_end, self.store_uri, self.instance_uid, status, reason
            )
        except Exception as exc:  # the store itself is gone: say so, the exit code still tells
            LOG.error("could not record the end of the run in the store: %s", exc)


def _by_worker(ready: list[m.EnvironmentsReady], workers: int) -> list[dict[str, str]]:
    """Per worker: the endpoints of its environments, by uid (each Muscle links to all)."""
    return [{r.uid: r.endpoints[w] for r in ready} for w in range(workers)]


def _check_agent(
    phase: PhaseSpec,
    agent: AgentSpec,
    sensors: dict[str, m.InfoDesc],
    actuators: dict[str, m.InfoDesc],
) -> None:
    for kind, wanted, available in (
        ("sensor", agent.sensors, sensors),
        ("actuator", agent.actuators, actuators),
    ):
        missing = [uid for uid in wanted if uid not in available]
        if missing:
            raise PhaseError(
                f"phase '{phase.name}', agent '{agent.name}': {kind}s {', '.join(missing)} are "
                f"not provided by the environments (they have: {', '.join(sorted(available))})"
            )


def _module(class_name: str) -> str:
    return class_name.partition(":")[0]


def _plain(config: Any) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(config)  # type: ignore[no-any-return]
