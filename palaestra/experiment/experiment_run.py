"""The ExperimentRun controller: walks the phases of a run and supervises all their processes.

Per phase it asks an environment conductor per environment and an agent conductor per agent
(see :mod:`palaestra.core.supervision.conductor`) to start their processes, and starts one
simulation controller per worker; it wires them together (environments first, because agents are
set up with the spaces the environments report), runs the episodes, shuts the phase down in order
(controllers and Muscles, then Brains, then environments), and waits until the store writer
holds everything the phase produced before the next phase may load its brain dumps.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from palaestra.agent.conductor import AgentConductor
from palaestra.core import liveness
from palaestra.core.description import limits, names
from palaestra.core.description.loading import load_class
from palaestra.core.description.seeds import derive_seed
from palaestra.core.description.specs import AgentSpec, ClassSpec, PhaseSpec, RunSpec
from palaestra.core.errors import NotResumableError, PalaestraError, RunFileError
from palaestra.core.procfs import set_title
from palaestra.core.supervision.conductor import Conductor
from palaestra.core.supervision.esm import Component, ComponentRuntime, State, on
from palaestra.core.supervision.processes import Child, preload
from palaestra.core.supervision.runtime import ComponentFailed, Runtime
from palaestra.core.supervision.start_methods import FORK
from palaestra.core.wire import messages as m
from palaestra.environment.conductor import EnvironmentConductor
from palaestra.experiment.evaluation import evaluations
from palaestra.experiment.offline import check_other_runs, recorded_steps
from palaestra.experiment.provenance import CodeRevision, package_versions
from palaestra.experiment.store_client import (
    WRITER,
    NullStore,
    WriterClient,
    dump_dir,
    store_enabled,
    writer_stuck,
)
from palaestra.store.writer_spec import STORE_WRITER, WriterArgs
from palaestra.version import __version__

LOG = logging.getLogger(__name__)

_Dumps = tuple[dict[str, Any] | None, dict[str, bytes], str]
"""An agent's dumps to start from: its ``loaded_from`` record (None: none), the dumps by
:func:`~palaestra.core.description.name_rules.dump_key` of their tags, and where they come from in
words (empty: nowhere)."""

T = TypeVar("T")


class PhaseError(RunFileError):
    """The run file asks for something the phase's environments do not offer (exit 2)."""


class ControllerArgs(msgspec.Struct, frozen=True, kw_only=True):
    """The arguments of a simulation controller, besides its name."""

    worker: int
    conditions: list[ClassSpec]
    params: dict[str, Any]
    answer_timeout: float
    phase: int = 0
    phase_id: int = 0
    store_endpoint: str | None = None


@dataclass
class _Phase:
    """A started phase: its spec, store ids, conductors, controllers and what they reported."""

    spec: PhaseSpec
    ids: dict[str, int]
    dumps: dict[str, _Dumps]
    environments: list[EnvironmentConductor] = field(default_factory=list)
    agents: list[AgentConductor] = field(default_factory=list)
    controllers: list[Child] = field(default_factory=list)
    agents_ready: list[m.AgentsReady] = field(default_factory=list)

    @property
    def conductors(self) -> list[Conductor]:
        return [*self.environments, *self.agents]


@dataclass(frozen=True)
class ResumeAt:
    """Where a resumed instance starts (see :mod:`palaestra.experiment.resume`)."""

    instance_id: int
    """The instance it continues (``resumed_from_id``)."""
    phase: int
    """The index of the phase it starts in; earlier phases are skipped."""
    first_episode: int
    """The first episode of that phase it plays (every worker did the ones before)."""
    dumps: dict[str, _Dumps] | None
    """Per agent, the dumps of that phase its Brain starts from (as :meth:`_find_dump`); an
    agent left out (all of them, where None) starts from those a fresh start of the phase
    finds, as the interrupted phase did: its Brain stored no dump in it before it stopped."""
    evaluated: tuple[tuple[m.AgentEvaluated, ...], ...] = ()
    """The agents' results of each evaluation of that phase completed before
    ``first_episode`` (evaluation 0, 1, ...): its termination conditions are told them before
    its first episode, as the uninterrupted run told them."""


class ExperimentRun(Component):
    """Runs one :class:`RunSpec` to its end; the executor's top component.

    Args:
        name: The component's name.
        run: The checked run file.
        store_uri: Where to record the run ("none": nowhere).
        data_path: Where brain dumps are written as files.
        answer_timeout: Seconds a plug-in may take to answer one step.
        start_timeout: Seconds a phase's processes (and the writer) may take to start.
        stop_timeout: Seconds each group of a phase's processes may take to stop.
        store_timeout: Seconds the store writer may take to answer one request.
        writer_priority: The store writer's: ``background`` (the runtime config's
            ``writer_priority``, see :func:`palaestra.core.supervision.affinity.to_background`)
            or ``normal``.
        on_episode: Called in this (the executor's) process with each
            :class:`~palaestra.core.wire.messages.EpisodeEnded` as a worker's episode ends; an
            exception it raises is logged and the run goes on.
        on_phase: Called likewise with a phase's index as the phase begins.
        resume: Where a resumed instance starts (None: at the beginning).
    """

    def __init__(
        self,
        name: str,
        *,
        run: RunSpec,
        store_uri: str,
        data_path: str = "_outputs",
        answer_timeout: float = limits.ANSWER_TIMEOUT,
        start_timeout: float = limits.START_TIMEOUT,
        stop_timeout: float = limits.STOP_TIMEOUT,
        store_timeout: float = limits.STORE_TIMEOUT,
        writer_priority: str = "normal",
        on_episode: Callable[[m.EpisodeEnded], None] | None = None,
        on_phase: Callable[[int], None] | None = None,
        resume: ResumeAt | None = None,
    ) -> None:
        super().__init__(name)
        self.resume = resume
        self.on_episode = on_episode
        self.on_phase = on_phase
        self.answer_timeout = answer_timeout
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.store_timeout = store_timeout
        self.writer_priority = writer_priority
        self.run = run
        self.store_uri = store_uri
        self.data_path = data_path
        self.instance_uid = str(uuid.uuid4())
        self.instance_id: int | None = None
        self.start_asked = False
        """Whether the writer was asked to record the run's start: it may have, unanswered."""
        self.signal: int | None = None
        self.store_endpoint: str | None = None
        self.store: WriterClient | NullStore = NullStore(data_path)
        self._main: asyncio.Task[None] | None = None

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        if not isinstance(runtime, Runtime):  # it spawns and supervises: only the real one
            raise TypeError(f"{self.name} runs in the executor's Runtime, not {runtime!r}")
        self.runtime = runtime
        set_title(names.EXECUTOR, self.instance_uid)  # (before the instance is recorded)
        self._main = runtime.start_task(self._run())
        return {}

    # --- the run -----------------------------------------------------------------------

    async def _run(self) -> None:
        self.runtime.start_task(
            self.runtime.watch_liveness(self.answer_timeout, self.store_timeout)
        )
        writer = None
        if store_enabled(self.store_uri):
            writer = self.runtime.spawn(
                WRITER,
                "StoreWriter",
                STORE_WRITER,
                WriterArgs(store_uri=self.store_uri, priority=self.writer_priority),
            )
        # what the run ran with, found while the writer starts (git's commands run meanwhile)
        revision = CodeRevision(self.run.path) if self.run.path else None
        versions = package_versions()
        if writer is not None:
            (endpoints,) = await self.runtime.wait_ready(
                [writer], self.start_timeout, "start_timeout"
            )
            self.store_endpoint = endpoints["store"]
            self.store = WriterClient(self.runtime, self.store_uri, self.store_timeout)
        await check_other_runs(self._store, self.run)  # before anything is recorded
        self.start_asked = True
        ids = await self._start_instance(
            m.StoreRunStart(
                experiment_uid=self.run.experiment_uid,
                run_uid=self.run.uid,
                instance_uid=self.instance_uid,
                document=self.run.document,
                file=os.path.abspath(self.run.path) if self.run.path else self.run.path,
                seed=self.run.seed,
                palaestra_version=__version__,
                host=socket.gethostname(),
                package_versions=versions,
                code_revision=revision.result() if revision is not None else None,
                overrides=self.run.overrides,
                resumed_from_id=self.resume.instance_id if self.resume else None,
            )
        )
        self.instance_id = ids["instance"]
        for spec in self.run.phases[self.resume.phase if self.resume else 0 :]:
            LOG.info("phase %d (%s) begins", spec.index, spec.name)
            self._phase_begins(spec.index)
            phase = await self._start_phase(spec)
            await self._play(phase)
            await self._stop_phase(phase)
        await self._store(m.StoreRunEnd(instance_id=self.instance_id, status="finished"))
        self.finish()

    async def _store(self, request: m.Msg) -> Any:
        return await self.store.ask(request)

    async def _start_instance(self, request: m.StoreRunStart) -> dict[str, int]:
        """Record the run's start; the ids of its experiment, run and instance. A resume the
        writer refused (another instance continues that instance already:
        :func:`palaestra.store.continued.claim`) recorded nothing: no end is recorded
        either."""
        try:
            ids: m.StoreIds = await self._store(request)
        except ComponentFailed as exc:
            if exc.error.kind == NotResumableError.__name__:
                self.start_asked = False
            raise
        return ids.ids

    def _phase_begins(self, index: int) -> None:
        """Tell :attr:`on_phase` (its failure is only logged)."""
        if self.on_phase is None:
            return
        try:
            self.on_phase(index)
        except Exception:  # a progress display must not fail the run
            LOG.exception("on_phase failed for phase %d", index)

    @on(m.EpisodeRows)
    def handle_episodes_ended(self, message: m.EpisodeRows) -> None:
        """Episodes of a worker ended (a simulation controller sends them in batches, see
        :data:`palaestra.simulation.episode_report.PROGRESS_SECONDS`): each to
        :attr:`on_episode`."""
        if self.on_episode is None:
            return
        for row in message.rows:
            self.handle_episode_ended(row)

    @on(m.EpisodeEnded)
    def handle_episode_ended(self, message: m.EpisodeEnded) -> None:
        """A worker's episode ended: tell :attr:`on_episode` (its failure is only logged)."""
        if self.on_episode is None:
            return
        try:
            self.on_episode(message)
        except Exception:  # a progress display must not fail the run
            LOG.exception(
                "on_episode failed for phase %d, worker %d, episode %d",
                message.phase,
                message.worker,
                message.episode,
            )

    # --- a phase: start, play, stop ----------------------------------------------------

    async def _start_phase(self, spec: PhaseSpec) -> _Phase:
        """Record the phase, start its processes and wire them: environments first (agents
        are set up with the spaces they report), then the controllers, then the agents."""
        resumed = self.resume.dumps if self.resume and self.resume.phase == spec.index else None
        resumed = resumed or {}
        dumps = {
            a.name: resumed.get(a.name) or await self._find_dump(spec, a) for a in spec.agents
        }
        replays = {
            a.name: []
            if self._pretrained(spec, a.name, resumed)
            else await recorded_steps(self._store, self.run, spec, a, self.instance_uid)
            for a in spec.agents
        }
        phase = _Phase(spec, (await self._store(self._phase_start(spec, dumps))).ids, dumps)
        self._make_conductors(phase)
        phase.controllers = self._spawn_controllers(spec, phase.ids["phase"])
        env_ready = await _together(
            c.setup(self._environment_setup(phase, e))
            for c, e in zip(phase.environments, spec.environments, strict=True)
        )
        await self.runtime.wait_ready(phase.controllers, self.start_timeout, "start_timeout")
        baselines: list[Any] = await _together(
            self.runtime.request(
                c.name,
                m.SimulationSetup(
                    environments=_endpoints(env_ready, w),
                    first_episode=self._first_played(spec),
                    start_timeout=self.start_timeout,
                ),
            )
            for w, c in enumerate(phase.controllers)
        )
        sensors = {s.uid: s for s in baselines[0].sensors}
        actuators = {a.uid: a for a in baselines[0].actuators}
        for agent in spec.agents:
            _check_agent(spec, agent, sensors, actuators)
        by_worker = _by_worker(env_ready, spec.config.worker)
        phase.agents_ready = await _together(
            c.setup(
                msgspec.structs.replace(
                    self._agent_setup(phase, a, sensors, actuators, by_worker),
                    replay=replays[a.name],
                )
            )
            for c, a in zip(phase.agents, spec.agents, strict=True)
        )
        return phase

    def _make_conductors(self, phase: _Phase) -> None:
        """One conductor per environment and per agent; their children fork from here, so
        their plug-ins are imported here, once (checking the run file usually did already);
        children started otherwise import them themselves."""
        spec, rt = phase.spec, self.runtime
        if rt.start_method == FORK:
            plugins = [e.name for e in spec.environments]
            plugins += [c.name for a in spec.agents for c in (a.brain, a.muscle, a.objective)]
            preload([name.partition(":")[0] for name in plugins])
        store, start = self.store_endpoint, self.start_timeout
        phase.environments = [
            EnvironmentConductor(
                names.environment_conductor(e.uid), rt, store_endpoint=store, start_timeout=start
            )
            for e in spec.environments
        ]
        phase.agents = [
            AgentConductor(
                names.agent_conductor(a.name), rt, store_endpoint=store, start_timeout=start
            )
            for a in spec.agents
        ]

    def _spawn_controllers(self, spec: PhaseSpec, phase_id: int) -> list[Child]:
        controller = load_class(spec.simulation.name)
        conditions = [*spec.simulation.conditions, *self.run.conditions]
        return [
            self.runtime.spawn(
                names.controller(w),
                "SimulationController",
                controller,
                ControllerArgs(
                    worker=w,
                    conditions=conditions,
                    params=dict(spec.simulation.params),
                    answer_timeout=self.answer_timeout,
                    phase=spec.index,
                    phase_id=phase_id,
                    store_endpoint=self.store_endpoint,
                ),
                worker=w,
            )
            for w in range(spec.config.worker)
        ]

    async def _play(self, phase: _Phase) -> None:
        """Run the phase's episodes: each controller until its worker is done."""
        spec = phase.spec
        await _together(
            self.runtime.request(
                c.name,
                m.SimulationRun(
                    agents=[
                        m.AgentEndpoint(
                            name=a.name,
                            endpoint=r.endpoints[w],
                            sensors=list(a.sensors),
                            actuators=list(a.actuators),
                            agent_id=phase.ids[f"agent:{a.name}"],
                        )
                        for a, r in zip(spec.agents, phase.agents_ready, strict=True)
                    ],
                    episodes=spec.config.episodes,
                    mode=spec.config.mode,
                    evaluate_every=evaluations(spec.config),
                    first_episode=self._first_episode(spec),
                    step_rate=spec.config.step_rate,
                    envs_per_worker=spec.config.envs_per_worker,
                    evaluated=self._evaluated(spec),
                ),
            )
            for w, c in enumerate(phase.controllers)
        )

    async def _stop_phase(self, phase: _Phase) -> None:
        """Stop in order, then wait until the writer holds every row its producers (the
        conductors' children) sent: the controllers and the Muscles together (the games are
        over: both are idle), then the Brains, then the environments. (A step costs a stop
        message and the exits, about 5 ms. The Brains' last dumps and the environments' own
        stop, MIDAS's say, are not run side by side: on a loaded machine the environments then
        ran out of their stop time.)"""
        muscles = [x for c in phase.agents for x in c.of_role("Muscle")]
        brains = [b for c in phase.agents for b in c.of_role("Brain")]
        environments = [e for c in phase.environments for e in c.children]
        for group in ([*phase.controllers, *muscles], brains, environments):
            late = await self.runtime.shutdown_children(group, "phase over", self.stop_timeout)
            if late:
                raise self.runtime.late_error(late, "stop", self.stop_timeout, "stop_timeout")
        producers = [child.name for c in phase.conductors for child in c.children]
        producers += [c.name for c in phase.controllers]  # their episodes
        await self._store(m.StoreFlush(producers=producers))
        await self._store(m.StorePhaseEnd(phase_id=phase.ids["phase"], status="finished"))

    def _pretrained(self, spec: PhaseSpec, agent: str, resumed: dict[str, _Dumps]) -> bool:
        """Whether the agent's Brain starts the phase from a dump of that phase (``resumed``:
        a resumed phase's, after its first episode), which holds its pre-training
        (``replay``): it is not pre-trained again, as the uninterrupted run pre-trains it once."""
        if self._first_episode(spec) == 0 or agent not in resumed:
            return False
        LOG.info(
            "agent '%s' in phase %d is not pre-trained again: it resumes at episode %d from "
            "a dump of the phase, which holds its pre-training",
            agent,
            spec.index,
            self._first_episode(spec),
        )
        return True

    def _first_episode(self, spec: PhaseSpec) -> int:
        """The phase's first episode to play: 0, or where a resumed instance starts."""
        if self.resume is not None and self.resume.phase == spec.index:
            return self.resume.first_episode
        return 0

    def _evaluated(self, spec: PhaseSpec) -> list[list[m.AgentEvaluated]]:
        """The results of the phase's evaluations a resumed instance's predecessors
        completed before its start (none: the phase starts at its beginning)."""
        if self.resume is not None and self.resume.phase == spec.index:
            return [list(results) for results in self.resume.evaluated]
        return []

    def _first_played(self, spec: PhaseSpec) -> int:
        """The number of the phase's first episode to play, evaluation rollouts counted."""
        first, every = self._first_episode(spec), evaluations(spec.config)
        return first + (first // every if every else 0)

    def _phase_start(self, spec: PhaseSpec, dumps: dict[str, _Dumps]) -> m.StorePhaseStart:
        return m.StorePhaseStart(
            instance_id=self.instance_id or 0,
            index=spec.index,
            name=spec.name,
            mode=spec.config.mode,
            workers=_lanes(spec),  # each game of envs_per_worker is recorded as a worker
            episodes=spec.config.episodes,
            config={
                "simulation": spec.simulation.name,
                **msgspec.to_builtins(spec.config),
                **({"first_episode": first} if (first := self._first_episode(spec)) else {}),
            },
            environments=[
                m.PhaseEnvironment(
                    uid=e.uid,
                    name=e.name,
                    params=dict(e.params),
                    seeds=self._env_seeds(spec, e.uid),
                )
                for e in spec.environments
            ],
            agents=[self._phase_agent(spec, a, dumps[a.name][0]) for a in spec.agents],
        )

    def _env_seeds(self, spec: PhaseSpec, uid: str) -> list[int]:
        """One seed per worker, or with ``envs_per_worker`` per game (lane ``w * N + i``): a
        game's seed is that of the worker with its lane's number."""
        return [
            derive_seed(self.run.seed, "environment", uid, spec.index, w)
            for w in range(_lanes(spec))
        ]

    def _environment_setup(self, phase: _Phase, env: Any) -> m.EnvironmentSetup:
        return m.EnvironmentSetup(
            environment=env,
            environment_id=phase.ids[f"environment:{env.uid}"],
            phase_id=phase.ids["phase"],
            workers=phase.spec.config.worker,
            seeds=self._env_seeds(phase.spec, env.uid),
            answer_timeout=self.answer_timeout,
            run_uid=self.run.uid,
            instance_uid=self.instance_uid,
            phase_index=phase.spec.index,
            record_every=phase.spec.config.record_every,
            data_path=self.data_path,
            envs_per_worker=phase.spec.config.envs_per_worker,
        )

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
        started: _Phase,
        agent: AgentSpec,
        sensors: dict[str, m.InfoDesc],
        actuators: dict[str, m.InfoDesc],
        environments: list[dict[str, str]],
    ) -> m.AgentSetup:
        phase = started.spec
        return m.AgentSetup(
            agent=agent,
            agent_id=started.ids[f"agent:{agent.name}"],
            phase_id=started.ids["phase"],
            run_uid=self.run.uid,
            instance_uid=self.instance_uid,
            phase_index=phase.index,
            phase_name=phase.name,
            mode=phase.config.mode,
            workers=phase.config.worker,
            brain_seed=self._brain_seed(phase, agent),
            muscle_seeds=self._muscle_seeds(phase, agent),
            sensors=[sensors[uid] for uid in agent.sensors],
            actuators=[actuators[uid] for uid in agent.actuators],
            dumps=started.dumps[agent.name][1],
            dump_source=started.dumps[agent.name][2],
            answer_timeout=self.answer_timeout,
            update_lag=phase.config.update_lag,
            record_every=phase.config.record_every,
            environments=environments,
            dump_dir=dump_dir(
                self.data_path, self.run.uid, self.instance_uid, phase.index, phase.name
            ),
        )

    async def _find_dump(self, phase: PhaseSpec, agent: AgentSpec) -> _Dumps:
        """Which dumps the agent starts from (``load:``, else the same agent one phase
        earlier): the newest of each tag there, with the ``loaded_from`` record and where
        they come from in words."""
        source = _dump_source(self.run.uid, phase, agent)
        if source is None and agent.load is not None:  # phase 0: no phase before it
            run = agent.load.experiment_run or self.run.uid
            what = (
                f"its load: names no phase, and there is no phase before phase {phase.index} "
                f"to take (give load: {{phase: N}}, the phase of run '{run}' to load from)"
            )
            self._missing_dump(phase, agent, what)
            return None, {}, ""
        if source is None:
            return None, {}, ""
        where = (
            f"agent '{source['agent']}' in phase {source['phase']} of run '{source['run_uid']}'"
        )
        if source["run_uid"] == self.run.uid:  # (its own run: from this instance's phases)
            source |= {"instance_id": self.instance_id, "instance_uid": self.instance_uid}
        found: m.StoreDump = await self._store(m.StoreFindDump(**source))
        if found.dumps:
            LOG.info(
                "agent '%s' in phase %d starts from the dumps of %s (%s), tagged %s",
                agent.name,
                phase.index,
                where,
                f"brain_states {found.brain_state_id}" if found.brain_state_id else "dump files",
                ", ".join(repr(tag) for tag in sorted(found.dumps)),
            )
            loaded = {"run": source["run_uid"], "agent": source["agent"], "phase": source["phase"]}
            return {**loaded, "brain_state_id": found.brain_state_id}, found.dumps, where
        self._missing_dump(phase, agent, f"no brain dump of {where}")
        return None, {}, where

    def _missing_dump(self, phase: PhaseSpec, agent: AgentSpec, what: str) -> None:
        """The agent's ``load`` found nothing to load: with ``strict: true`` the run fails,
        else a warning (without ``load``, a phase's first agents start fresh silently)."""
        message = f"agent '{agent.name}' in phase {phase.index}: {what}"
        if agent.load is not None and agent.load.strict:
            raise ComponentFailed(
                m.ErrorInfo(process=self.name, kind="MissingBrainDump", message=message)
            )
        if agent.load is not None:
            LOG.warning("%s; it starts fresh", message)

    # --- ending ------------------------------------------------------------------------

    def on_signal(self, signum: int) -> None:
        """Stop the run, to be marked cancelled "interrupted by SIG...". A signal that comes
        once the run has ended (failed, while its processes stop and its end is recorded)
        changes nothing of how it ended: it fails with its reason."""
        if self.signal is None and not self.ended:
            self.signal = signum
            self.stop(f"interrupted by {signal.Signals(signum).name}")
            if self._main is not None:
                self._main.cancel()
            self.finish()

    async def teardown(self) -> None:
        """End in order: the phase's processes stop first (Muscles and environments flush, Brains
        dump once), then the end of the run is recorded; the runtime then stops the writer."""
        if self._main is not None and not self._main.done():
            self._main.cancel()
        await self._stop_phase_processes()
        ending = self._ending()
        if ending is not None:
            await self._record_end(*ending)

    async def _stop_phase_processes(self) -> None:
        rt = self.runtime
        others = [c for c in rt.supervisor.running() if c.name != WRITER]
        if others:
            reason = self.stop_reason or "the run failed"
            failed = self.state is State.ERROR
            timeout = limits.FAILED_END_TIMEOUT if failed else limits.END_TIMEOUT
            if await rt.shutdown_children(others, reason, timeout):
                await rt.supervisor.stop_all(children=others, grace=1.0)

    def _ending(self) -> tuple[str, str] | None:
        """The status and reason to record, unless the run finished (recorded) or never began.

        A run whose start the writer did not answer (``store_timeout``, an interrupt) may be
        in the store all the same, as the writer commits it later: its end is recorded too."""
        if not self.start_asked or (self.state is State.FINISHED and self.signal is None):
            return None
        if self.signal is not None:
            return "cancelled", self.stop_reason
        return "error", self.error.describe() if self.error is not None else "unknown error"

    async def _record_end(self, status: str, reason: str) -> None:
        """Through the writer if it answers, else (a writer gone, stopped or stuck, which is
        then killed: it may hold the store's lock) straight into the store."""
        if not isinstance(self.store, WriterClient):
            return
        writer = self.runtime.supervisor.children.get(WRITER)
        if writer is not None and not writer.exited.is_set():
            if not self.store.unresponsive and self.instance_id is not None:
                request = m.StoreRunEnd(
                    instance_id=self.instance_id or 0, status=status, reason=reason
                )
                try:
                    async with liveness.seen_timeout(limits.STORE_END_TIMEOUT):
                        await self.runtime.request(WRITER, request)
                    return
                except TimeoutError:
                    LOG.warning(
                        "%s did not record the end of the run within %g s: %s",
                        WRITER,
                        limits.STORE_END_TIMEOUT,
                        writer_stuck(writer.pid, self.store_uri)[0],
                    )
                except ComponentFailed as exc:
                    LOG.warning("%s did not record the end of the run: %s", WRITER, exc)
            await self.runtime.supervisor.stop_all(children=[writer], grace=1.0)
        await self._record_end_directly(status, reason)

    async def _record_end_directly(self, status: str, reason: str) -> None:
        """Write the end of the run into the store from here, retrying while it is locked (a
        lock may pass) for up to ``RECORD_END_TIMEOUT`` seconds; another failure (a store
        without the run, a file replaced) does not pass by waiting."""
        from palaestra.store.direct import record_run_end  # (only here: its driver imports)

        loop = asyncio.get_running_loop()
        deadline = loop.time() + limits.RECORD_END_TIMEOUT
        LOG.warning(
            "recording the end of the run straight into the store (for up to %g s)",
            limits.RECORD_END_TIMEOUT,
        )
        while True:
            try:
                await asyncio.to_thread(
                    record_run_end, self.store_uri, self.instance_uid, status, reason
                )
                return
            except (PalaestraError, OSError) as exc:
                locked = any(word in str(exc).lower() for word in ("locked", "busy"))
                if not locked or loop.time() >= deadline:  # the exit code still tells
                    LOG.error("could not record the end of the run in the store: %s", exc)
                    return
                LOG.warning("recording the end of the run failed (%s); trying again", exc)
                await asyncio.sleep(limits.RETRY_PAUSE)


async def _together(coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``coros`` in a task group (the first failure cancels the others) and return their
    results in order; the first failure is raised as itself, not in an exception group."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coros]
    except BaseExceptionGroup as failures:
        raise _first(failures) from None
    return [t.result() for t in tasks]


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def _dump_source(run_uid: str, phase: PhaseSpec, agent: AgentSpec) -> dict[str, Any] | None:
    """Where the agent's dump is to come from (a ``StoreFindDump``'s fields), if anywhere."""
    load = agent.load
    if load is None:
        index = phase.index - 1
        return {"run_uid": run_uid, "agent": agent.name, "phase": index} if index >= 0 else None
    index = load.phase if load.phase is not None else phase.index - 1
    if index < 0:
        return None
    return {
        "run_uid": load.experiment_run or run_uid,
        "agent": load.agent or agent.name,
        "phase": index,
    }


def _endpoints(ready: list[m.EnvironmentsReady], worker: int) -> list[m.EnvironmentEndpoint]:
    """The endpoints of worker ``worker``'s environments, for its simulation controller."""
    return [m.EnvironmentEndpoint(uid=r.uid, endpoint=r.endpoints[worker]) for r in ready]


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


def _lanes(spec: PhaseSpec) -> int:
    """The phase's workers as the store records them: with ``envs_per_worker`` N, N per
    worker (each game a lane)."""
    return spec.config.worker * spec.config.envs_per_worker
