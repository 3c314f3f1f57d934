"""The simulation controller of one worker: steps its environments and its agents' Muscles.

Subclasses decide who acts when (:class:`~palaestra.simulation.vanilla.Vanilla`: everyone on
every step; :class:`~palaestra.simulation.taking_turns.TakingTurns`: one agent per step). The
controller talks to each peer over its own DEALER socket: request, answer, no broker. All of
that runs in the controller's hot loop (:mod:`palaestra.core.hotloop`) on blocking sockets;
the asyncio thread only relays the parent's requests and answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core import names
from palaestra.core.esm import Component, ComponentRuntime, on
from palaestra.core.hotloop import HotLoop, run_hot
from palaestra.core.loading import load_class
from palaestra.core.specs import ClassSpec
from palaestra.core.termination import (
    EpisodeEndsWithEnvironment,
    PhaseEndsAfterEpisodes,
    TerminationCondition,
)
from palaestra.core.watch import Waiting, watch


class Peer:
    """A DEALER socket to one environment or Muscle, used strictly request-then-answer.

    ``waiting`` tells the watchdog when an answer is overdue; it names the peer's process.
    """

    __slots__ = ("name", "socket", "waiting", "receive")

    def __init__(
        self, name: str, socket: zmq.Socket[bytes], waiting: Waiting, hot: HotLoop
    ) -> None:
        self.name = name
        self.socket = socket
        self.waiting = waiting
        self.receive = hot.receiver(socket)  # a stop request interrupts the wait

    def tell(self, message: m.Msg) -> None:
        self.socket.send(m.encode(message))

    def answer(self) -> Any:
        waiting = self.waiting
        waiting.begin()
        payload = self.receive()
        waiting.end()
        return m.decode(payload)

    def ask(self, message: m.Msg) -> Any:
        self.socket.send(m.encode(message))
        return self.answer()


def ask_all(peers: Sequence[Peer], messages: Sequence[m.Msg]) -> list[Any]:
    """Send each peer its message, then collect the answers: the peers work in parallel."""
    if len(peers) == 1:
        return [peers[0].ask(messages[0])]
    for peer, message in zip(peers, messages, strict=True):
        peer.tell(message)
    return [peer.answer() for peer in peers]


class AgentPeer(Peer):
    """An agent's Muscle in this worker: what it reads, which environments it acts on."""

    __slots__ = ("process", "sensors", "actuators", "environments", "rewards")

    def __init__(
        self,
        name: str,
        socket: zmq.Socket[bytes],
        waiting: Waiting,
        hot: HotLoop,
        sensors: list[str],
        actuators: list[str],
    ) -> None:
        super().__init__(name, socket, waiting, hot)
        self.process = waiting.name
        self.sensors = sensors
        self.actuators = actuators
        self.environments = {uid.partition(".")[0] for uid in actuators}
        self.rewards: list[m.InfoDesc] | None = None


class SimulationController(Component):
    """Runs the episodes of one worker. Subclasses implement :meth:`run_episode`."""

    def __init__(
        self,
        name: str,
        *,
        worker: int,
        conditions: Sequence[ClassSpec] = (),
        params: dict[str, Any] | None = None,
        answer_timeout: float = 300.0,
    ) -> None:
        super().__init__(name)
        self.worker = worker
        self.params = params or {}
        self.answer_timeout = answer_timeout
        self.waiting: list[Waiting] = []
        self.conditions: list[TerminationCondition] = [
            load_class(c.name)(**c.params) for c in conditions
        ]
        self.episode_conditions = [
            c
            for c, made in zip(conditions, self.conditions, strict=True)
            if _overrides(made, "episode_done")
        ]
        if not any(_overrides(c, "episode_done") for c in self.conditions):
            self.conditions.append(EpisodeEndsWithEnvironment())
        if not any(_overrides(c, "phase_done") for c in self.conditions):
            self.conditions.append(PhaseEndsAfterEpisodes())
        self.environments: list[Peer] = []
        self.agents: list[AgentPeer] = []
        self.baselines: list[m.EnvBaseline] = []
        self.values: dict[str, Any] = {}
        self.steps = 0
        self.episode_over = False

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        self.runtime = runtime
        runtime.start_task(watch(self.waiting))
        return {}

    def _waiting(self, process: str, grace: float = 0.0) -> Waiting:
        waiting = Waiting(process, self.answer_timeout, grace)
        self.waiting.append(waiting)
        return waiting

    # --- the parent's requests (asyncio thread) ------------------------------------------

    @on(m.SimulationSetup)
    def handle_setup(self, request: m.SimulationSetup) -> None:
        """Start the hot loop; it answers with the baseline once the environments started
        (the parent's other messages, such as a Shutdown, are not held up meanwhile)."""
        self.hot = run_hot(self.runtime, self.name, lambda hot: self._serve(hot, request))

    @on(m.SimulationRun)
    def handle_run(self, request: m.SimulationRun) -> None:
        self.hot.post(request)  # answered with SimulationDone when the episodes are over

    async def close(self) -> None:
        if hasattr(self, "hot"):
            await self.hot.stop()

    def _send_parent(self, message: m.Msg) -> None:
        self.runtime.start_task(self.runtime.send_parent(message))

    # --- the hot loop ---------------------------------------------------------------------

    def _serve(self, hot: HotLoop, request: m.SimulationSetup) -> None:
        self.hot_loop = hot
        # an environment waits for Muscles, a Muscle for its Brain, each with the same limit
        # and naming whom it waits for: let them speak first
        grace = max(1.0, min(5.0, self.answer_timeout / 2))
        self.environments = [
            Peer(
                e.uid,
                self._connect(e.endpoint),
                self._waiting(names.environment(e.uid, self.worker), 2 * grace),
                hot,
            )
            for e in request.environments
        ]
        self._start_environments(reset=False)
        answer = m.SimulationBaseline(
            worker=self.worker,
            sensors=[s for b in self.baselines for s in b.sensors],
            actuators=[a for b in self.baselines for a in b.actuators],
        )
        hot.call(self._send_parent, answer)
        run: m.SimulationRun = hot.command()
        self.agents = [
            AgentPeer(
                a.name,
                self._connect(a.endpoint),
                self._waiting(names.muscle(a.name, self.worker), grace),
                hot,
                a.sensors,
                a.actuators,
            )
            for a in run.agents
        ]
        episodes = self._run(run.episodes)
        hot.call(
            self._send_parent,
            m.SimulationDone(worker=self.worker, episodes=episodes, steps=self.steps),
        )
        hot.command()  # nothing more to do: wait for the stop

    def _connect(self, endpoint: str) -> zmq.Socket[bytes]:
        sock = self.hot_loop.socket(zmq.DEALER)
        sock.connect(endpoint)
        return sock

    def _start_environments(self, reset: bool) -> None:
        self.baselines = ask_all(
            self.environments, [m.EnvStart(reset=reset)] * len(self.environments)
        )
        self.values = {s.uid: s.value for b in self.baselines for s in b.sensors}

    turns: str | None = None
    """``all`` or ``round_robin`` if an environment may drive this controller's episodes
    itself (see :meth:`_env_episode`); None for controllers with their own loop."""

    def _run(self, episodes: int) -> int:
        done = 0
        env_driven = self._env_drives()
        while not any(c.phase_done(done, episodes) for c in self.conditions):
            if done > 0:
                self._start_environments(reset=True)
            self._begin_episode(done, self.environments[0].name if env_driven else "")
            if env_driven:
                self._env_episode()
            else:
                self.run_episode()
            done += 1
        return done

    def _env_drives(self) -> bool:
        """A single environment can run the episode itself when the order of turns is one it
        knows and no subclass changed :meth:`run_episode`."""
        defining: Any = _class_defining_turns(type(self))
        own_loop = type(self).run_episode is not defining.run_episode
        return self.turns is not None and not own_loop and len(self.environments) == 1

    def _env_episode(self) -> None:
        """Hand the episode to the environment: it sends observations straight to the
        Muscles and steps when their set points are in, two messages per step fewer."""
        env = self.environments[0]
        request = m.EnvEpisode(
            agents=[
                m.EpisodeAgent(
                    process=a.process,
                    sensors=a.sensors,
                    acts_here=env.name in a.environments,
                )
                for a in self.agents
            ],
            turns=self.turns or "all",
            conditions=self.episode_conditions,
        )
        env.tell(request)
        # no answer_timeout on a whole episode (it takes as long as it takes): the environment
        # watches its own steps and the Muscles it waits for
        answer = m.decode(env.receive())
        if not isinstance(answer, m.EnvEpisodeDone):
            raise TypeError(f"{self.name}: {type(answer).__name__} from {env.name}, not the end")
        self.steps += answer.steps

    def _begin_episode(self, episode: int, driver: str) -> None:
        sensors = {s.uid: s for b in self.baselines for s in b.sensors}
        actuators = {a.uid: a for b in self.baselines for a in b.actuators}
        for agent in self.agents:
            agent.rewards = None
        ask_all(
            self.agents,
            [
                m.AgentEpisode(
                    episode=episode,
                    sensors=[sensors[uid] for uid in agent.sensors],
                    actuators=[actuators[uid] for uid in agent.actuators],
                    driver=driver,
                )
                for agent in self.agents
            ],
        )

    # --- building blocks for subclasses --------------------------------------------------

    def step_message(self, agent: AgentPeer, step: int, done: bool = False) -> m.AgentStep:
        values = self.values
        return m.AgentStep(
            step=step,
            values=[values[uid] for uid in agent.sensors],
            rewards=agent.rewards,
            done=done,
        )

    def finish_episode(self) -> None:
        """Give every agent its last rewards with ``done``, completing its last transition."""
        ask_all(self.agents, [self.step_message(a, self.steps, done=True) for a in self.agents])

    def step(self, acting: Sequence[AgentPeer], step: int) -> list[m.InfoDesc]:
        """One step of the world: ``acting`` agents act on the current sensor values and send
        their set points straight to the environments, which step once all expected set
        points are in. Returns the rewards of all environments; sets :attr:`episode_over`.
        """
        for agent in acting:
            agent.tell(self.step_message(agent, step))
        environments = self.environments
        for env in environments:
            env.tell(m.EnvStep(expect=[a.process for a in acting if env.name in a.environments]))
        states = [env.answer() for env in environments]
        rewards: list[m.InfoDesc] = []
        values = self.values
        for baseline, state in zip(self.baselines, states, strict=True):
            for desc, value in zip(baseline.sensors, state.values, strict=True):
                values[desc.uid] = value
            rewards.extend(state.rewards)
        flags = [state.done for state in states]
        self.episode_over = any(c.episode_done(flags) for c in self.conditions)
        self.steps += 1
        return rewards

    def run_episode(self) -> None:
        raise NotImplementedError


def _overrides(condition: TerminationCondition, method: str) -> bool:
    return getattr(type(condition), method) is not getattr(TerminationCondition, method)


def _class_defining_turns(cls: type) -> type:
    """The class in ``cls``'s hierarchy that set :attr:`SimulationController.turns`."""
    for klass in cls.__mro__:
        if "turns" in vars(klass):
            return klass
    return cls
