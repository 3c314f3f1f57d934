"""The rollout-worker process: runs one Muscle and its Objective for one worker.

It plays the worker's games round by round (:mod:`palaestra.agent.muscle_lanes`: the
transitions completed, the Brain consulted, the set points answered). In a test phase the
Muscle loads the trained model (``prepare_model``, after ``setup``) from the agent's brain
dumps before its first step. The Brain and the environments are reached over direct links
(:mod:`palaestra.core.wire.channel`, no broker); the simulation controller over ZMQ.
"""

from __future__ import annotations

import logging
import pickle
from typing import NoReturn

import numpy as np
import zmq

from palaestra.agent.brain_link import BrainLink
from palaestra.agent.context import BrainDumps, MuscleContext
from palaestra.agent.filter import FilterChain
from palaestra.agent.hot_reload import (
    HotReload,
    plugin_class,
    rebuilt_muscle,
    retire,
    watching,
)
from palaestra.agent.muscle import Muscle
from palaestra.agent.muscle_lanes import MuscleLanes
from palaestra.agent.muscle_links import MuscleLinks
from palaestra.agent.muscle_records import MuscleRecords
from palaestra.agent.muscle_schema import Schema
from palaestra.agent.objective import Objective
from palaestra.agent.objective_stop import ObjectiveStop
from palaestra.agent.statistics import end_statistics
from palaestra.core.description import names
from palaestra.core.description.specs import AgentSpec
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode
from palaestra.core.plugin import call
from palaestra.core.supervision.esm import Component, ComponentRuntime
from palaestra.core.supervision.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.supervision.watch import watch
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, Listener, PeerGone
from palaestra.core.wire.records import connect_store
from palaestra.core.wire.transport import endpoint_for, link_for, with_link

LOG = logging.getLogger(__name__)


class MuscleProcess(Component):
    """One agent's Muscle in one worker."""

    objective: Objective

    def __init__(
        self,
        name: str,
        *,
        agent: AgentSpec,
        agent_id: int,
        worker: int,
        mode: str,
        seed: int,
        brain_endpoint: str,
        environments: dict[str, str] | None = None,
        store_endpoint: str | None,
        sensors: list[m.InfoDesc],
        actuators: list[m.InfoDesc],
        answer_timeout: float = 300.0,
        update_lag: int = 0,
        dumps: dict[str, bytes] | None = None,
        dump_source: str = "",
        record_every: int = 1,
        phase_id: int = 0,
    ) -> None:
        super().__init__(name)
        self.peers = MuscleLinks(brain_endpoint, environments or {}, store_endpoint)
        self.brain = BrainLink(
            name, names.brain(agent.name), answer_timeout, update_lag, self._apply, self._idle
        )
        self.agent = agent
        self.worker = worker
        self.mode = mode
        self.schema = Schema(agent.name, seed)  # its sensors and actuators, the checks
        self.episode = 0
        # its rows, statistics and plug-in records (the store's once it serves)
        self.out = MuscleRecords(name, agent.name, agent_id, worker, phase_id, record_every)
        reload = None  # made before the build (see HotReload)
        if agent.hot_reload:
            plugins = {"muscle": agent.muscle.name, "objective": agent.objective.name}
            reload = HotReload(name, agent.name, plugins)
        dumps_of = BrainDumps(loaded=dumps or {}, source=dump_source, owner=name)
        self.muscle = self._construct(agent, sensors, actuators, dumps_of, seed, reload)
        self.filters = FilterChain(agent.filters)
        self.objective_stop = ObjectiveStop(agent.objective_stop) if agent.objective_stop else None
        self.evaluating = Evaluating()  # whether the episode is an evaluation rollout
        self.games: MuscleLanes | None = None  # the worker's games (one, or envs_per_worker)
        self.reload: HotReload | None = None
        if reload is not None:
            self.use_reload(reload)

    # --- hot reload ----------------------------------------------------------------------

    def use_reload(self, reload: HotReload) -> None:
        """Look for changed plug-in files with ``reload`` before each step (or round), if it
        has any file to watch."""
        if watching(self.name, reload, self.agent, brain=False):
            reload.rebuild = self._rebuild
            self.reload = reload

    def reload_check(self, worker: int, episode: int, step: int) -> None:
        """Look for changed plug-in files now (a hot reload is on); a reload's rows name where
        it happened (with ``envs_per_worker``: the round's first game)."""
        assert self.reload is not None
        outcomes = self.reload.check()
        if outcomes:
            self.out.code_reloads(self.reload.rows(outcomes, worker, episode, step))

    def _rebuild(self, classes: dict[str, type]) -> None:
        """New Muscle and Objective instances from reloaded classes, swapped in when both
        were built (a failure keeps the old ones)."""
        old = self.muscle
        muscle, objective = rebuilt_muscle(
            self.agent, classes, old, self.objective, self.mode, self.brain.last_update
        )
        self.objective = objective
        if muscle is old:
            return
        self.muscle = muscle
        for agent_filter in self.filters.filters:
            agent_filter.muscle = muscle
        self.out.swap(muscle)
        retire(self.name, old, self.out)

    def _construct(
        self,
        agent: AgentSpec,
        sensors: list[m.InfoDesc],
        actuators: list[m.InfoDesc],
        dumps: BrainDumps,
        seed: int,
        reload: HotReload | None,
    ) -> Muscle:
        """The Muscle and the Objective (``self.objective``), built from the classes of the
        run, or with hot reload those of their modules as ``reload`` loaded them."""
        muscle_class = plugin_class(reload, "muscle", agent.muscle.name)
        muscle: Muscle = call(muscle_class, **agent.muscle.params)
        objective_class = plugin_class(reload, "objective", agent.objective.name)
        self.objective = call(objective_class, **agent.objective.params)
        self.schema.set(sensors, actuators)
        muscle.attach(
            MuscleContext(
                name=agent.name,
                uid=self.name,
                worker=self.worker,
                mode=self.mode,
                seed=seed,
                sensors=self.schema.spaces.build(SensorInformation, sensors),
                actuators=self.schema.spaces.build(ActuatorInformation, actuators),
                rng=np.random.default_rng(seed),
                dumps=dumps,
                recorder=self.out.recorder,
            )
        )
        return muscle

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        endpoint = endpoint_for(runtime.run_dir, names.endpoint(self.name, "muscle"))
        self.filters.set_up(muscle=self.muscle)
        call(self.muscle.setup)
        # the trained model, after setup: a Muscle that builds its model there (harl's
        # PipelineMuscle) loads into it (palaestrAI 3.5.18 never calls it: Muscle.prepare_model)
        if self.mode == "test":
            call(self.muscle.prepare_model)
        listener = self.peers.listener = Listener(link_for(endpoint))  # the controller's
        link = runtime.links.listen(listener)  # its gateway, in a run across hosts
        self.hot = loop = HotLoop(runtime, self.name)  # (known before it runs)
        router, announced = loop.bind(zmq.ROUTER, endpoint)
        run_hot(runtime, self.name, lambda hot: self._serve(hot, router), loop)
        runtime.start_task(watch([self.brain.waiting]))
        return {"muscle": with_link(announced, link)}

    def _serve(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        """The hot loop: begin episodes and step, consulting the Brain."""
        assert self.peers.listener is not None
        hot.own(self.peers.listener)
        self.out.connect(connect_store(hot, self.peers.store), self.muscle)
        wait = hot.poller(router)
        rows, statistics, records = self.out.sinks()
        with closing_producer(rows, self.name, statistics, records):
            while True:
                wait()
                sender, payload = router.recv_multipart()
                message = m.decode(payload)
                if isinstance(message, m.AgentEvaluate):  # its rollouts are over
                    router.send_multipart([sender, self._evaluate(message)])
                elif isinstance(message, m.AgentEpisode):
                    self.begin_episode(message)
                    # acknowledged: the episode's first step may come from another peer
                    router.send_multipart([sender, m.encode(m.AgentActions(setpoints={}))])
                    if self.games is None:  # (kept over the phase: its games go on)
                        self.games = MuscleLanes(self, message.lanes)
                    # the rounds come over a link: the environment's that plays them, or
                    # the simulation controller's (it linked to us before the episode)
                    if message.driver:
                        self.games.play(self.peers.environments[message.driver])
                    else:
                        self.games.play(self.peers.of_controller(hot))
                else:
                    raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    def wire(self, brain: Channel, environments: dict[str, Channel]) -> None:
        """Use these links to the Brain and to the worker's environments (by uid); a test
        wires in-memory links (:class:`palaestra.testing.FakeLink`)."""
        self.brain.channel = brain
        self.peers.environments = environments

    def begin_episode(self, message: m.AgentEpisode) -> None:
        if not self.brain.wired:  # (the Brain and the worker's environments are up by now)
            self.wire(*self.peers.connect(self.hot, self.agent.name, self.worker))
        self.evaluating.set(self.muscle, message.evaluation)
        self.episode = message.episode
        self.schema.set(message.sensors, message.actuators)

    @property
    def evaluation(self) -> bool:
        """Whether the episode is an evaluation rollout (test mode, the Brain not told)."""
        return self.evaluating.on

    @property
    def end_phase(self) -> bool:
        """Whether the Brain said its phase rule holds: no further episode."""
        return self.brain.end_phase

    def _evaluate(self, message: m.AgentEvaluate) -> bytes:
        """Ask the Brain to judge the evaluation's rollouts; its answer, to pass on."""
        self.brain.send(m.encode(message))
        return self.brain.receive()

    def _apply(self, answer: m.BrainUpdate) -> None:
        """The Brain's answer: its update to the Muscle."""
        if answer.update is not None:
            call(self.muscle.update, pickle.loads(answer.update))

    def _idle(self) -> NoReturn:
        self.hot.idle()  # a peer hung up: its parent reports why

    def send_to(self, link: Channel, data: bytes) -> None:
        try:
            link.send(data)
        except PeerGone:
            self._idle()

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        self.out.recorder.end("record it at a step (propose_actions(), update())")
        end_statistics(self.muscle, "add it at a step (propose_actions(), update())")
        call(self.muscle.teardown)


class Evaluating:
    """Whether a Muscle's episode is an evaluation rollout: the Muscle then acts in test mode
    (its own mode, if it set one, comes back after)."""

    __slots__ = ("on", "own_mode")

    def __init__(self) -> None:
        self.on = False
        self.own_mode: Mode | None = None  # the Muscle's own mode, restored after evaluation

    def set(self, muscle: Muscle, evaluation: bool) -> None:
        """Begin an evaluation rollout of ``muscle`` or a normal episode."""
        if evaluation == self.on:
            return
        attributes = muscle.__dict__
        if evaluation:
            self.own_mode = attributes.get("_palaestra_mode")
            attributes["_palaestra_mode"] = Mode.TEST
        elif self.own_mode is None:
            attributes.pop("_palaestra_mode", None)
        else:
            attributes["_palaestra_mode"] = self.own_mode
        self.on = evaluation
