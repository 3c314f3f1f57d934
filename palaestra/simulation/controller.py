"""The simulation controller of one worker: steps its environments and its agents' Muscles.

Subclasses decide who acts when (:class:`~palaestra.simulation.vanilla.Vanilla`: everyone on
every step; :class:`~palaestra.simulation.taking_turns.TakingTurns`: one agent per step). The
controller talks to each peer over its own DEALER socket: request, answer, no broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core.esm import Component, on
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

    __slots__ = ("name", "socket", "waiting")

    def __init__(self, name: str, socket: Any, waiting: Waiting) -> None:
        self.name = name
        self.socket = socket
        self.waiting = waiting

    async def ask(self, message: m.Msg) -> Any:
        waiting = self.waiting
        await self.socket.send(m.encode(message))
        waiting.begin()
        answer = await self.socket.recv()
        waiting.end()
        return m.decode(answer)

    async def tell(self, message: m.Msg) -> None:
        await self.socket.send(m.encode(message))


class AgentPeer(Peer):
    __slots__ = ("sensors", "actuators", "rewards")

    def __init__(
        self, name: str, socket: Any, waiting: Waiting, sensors: list[str], actuators: list[str]
    ) -> None:
        super().__init__(name, socket, waiting)
        self.sensors = sensors
        self.actuators = actuators
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
        self.answer_timeout = answer_timeout
        self.waiting: list[Waiting] = []
        self.params = params or {}
        self.conditions: list[TerminationCondition] = [
            load_class(c.name)(**c.params) for c in conditions
        ]
        if not any(
            type(c).episode_done is not TerminationCondition.episode_done for c in self.conditions
        ):
            self.conditions.append(EpisodeEndsWithEnvironment())
        if not any(
            type(c).phase_done is not TerminationCondition.phase_done for c in self.conditions
        ):
            self.conditions.append(PhaseEndsAfterEpisodes())
        self.environments: list[Peer] = []
        self.agents: list[AgentPeer] = []
        self.baselines: list[m.EnvBaseline] = []
        self.values: dict[str, Any] = {}
        self.steps = 0
        self.episode_over = False

    async def setup(self, runtime: Any) -> dict[str, str]:
        self.runtime = runtime
        runtime.start_task(watch(self.waiting))
        return {}

    def _waiting(self, process: str, grace: float = 0.0) -> Waiting:
        waiting = Waiting(process, self.answer_timeout, grace)
        self.waiting.append(waiting)
        return waiting

    def _connect(self, endpoint: str) -> Any:
        sock = self.runtime.socket(zmq.DEALER)
        sock.connect(endpoint)
        return sock

    @on(m.SimulationSetup)
    async def handle_setup(self, request: m.SimulationSetup) -> m.SimulationBaseline:
        self.environments = [
            Peer(
                e.uid,
                self._connect(e.endpoint),
                self._waiting(f"Environment-{e.uid}-{self.worker}"),
            )
            for e in request.environments
        ]
        await self._start_environments(reset=False)
        return m.SimulationBaseline(
            worker=self.worker,
            sensors=[s for b in self.baselines for s in b.sensors],
            actuators=[a for b in self.baselines for a in b.actuators],
        )

    async def _start_environments(self, reset: bool) -> None:
        self.baselines = list(
            await asyncio.gather(*(env.ask(m.EnvStart(reset=reset)) for env in self.environments))
        )
        self.values = {s.uid: s.value for b in self.baselines for s in b.sensors}

    @on(m.SimulationRun)
    def handle_run(self, request: m.SimulationRun) -> None:
        # A Muscle waits for its Brain with the same limit and names it: let it speak first.
        grace = max(1.0, min(5.0, self.answer_timeout / 2))
        self.agents = [
            AgentPeer(
                a.name,
                self._connect(a.endpoint),
                self._waiting(f"Muscle-{a.name}-{self.worker}", grace),
                a.sensors,
                a.actuators,
            )
            for a in request.agents
        ]
        self.runtime.start_task(self._run(request.episodes))

    async def _run(self, episodes: int) -> None:
        done = 0
        while not any(c.phase_done(done, episodes) for c in self.conditions):
            if done > 0:
                await self._start_environments(reset=True)
            await self._begin_episode(done)
            await self.run_episode()
            done += 1
        await self.runtime.send_parent(
            m.SimulationDone(worker=self.worker, episodes=done, steps=self.steps)
        )

    async def _begin_episode(self, episode: int) -> None:
        sensors = {s.uid: s for b in self.baselines for s in b.sensors}
        actuators = {a.uid: a for b in self.baselines for a in b.actuators}
        for agent in self.agents:
            agent.rewards = None
            await agent.tell(
                m.AgentEpisode(
                    episode=episode,
                    sensors=[sensors[uid] for uid in agent.sensors],
                    actuators=[actuators[uid] for uid in agent.actuators],
                )
            )

    # --- building blocks for subclasses --------------------------------------------------

    async def act(self, agent: AgentPeer, step: int) -> dict[str, Any]:
        """Ask ``agent`` for set points on the current sensor values."""
        values = self.values
        reply: m.AgentActions = await agent.ask(
            m.AgentStep(
                step=step,
                values=[values[uid] for uid in agent.sensors],
                rewards=agent.rewards,
                done=False,
            )
        )
        return reply.setpoints

    async def finish_episode(self) -> None:
        """Give every agent its last rewards with ``done``, completing its last transition."""
        values = self.values
        await asyncio.gather(
            *(
                agent.ask(
                    m.AgentStep(
                        step=self.steps,
                        values=[values[uid] for uid in agent.sensors],
                        rewards=agent.rewards,
                        done=True,
                    )
                )
                for agent in self.agents
            )
        )

    async def step_environments(self, setpoints: dict[str, Any]) -> list[m.InfoDesc]:
        """Send set points (full uids) to their environments; returns all rewards.

        Returns the rewards and sets :attr:`episode_over` from the termination conditions.
        """
        by_env: dict[str, dict[str, Any]] = {env.name: {} for env in self.environments}
        for uid, value in setpoints.items():
            env_uid, _, local = uid.partition(".")
            by_env[env_uid][local] = value
        if len(self.environments) == 1:
            env = self.environments[0]
            states = [await env.ask(m.EnvUpdate(setpoints=by_env[env.name]))]
        else:
            states = await asyncio.gather(
                *(env.ask(m.EnvUpdate(setpoints=by_env[env.name])) for env in self.environments)
            )
        rewards: list[m.InfoDesc] = []
        for baseline, state in zip(self.baselines, states, strict=True):
            for desc, value in zip(baseline.sensors, state.values, strict=True):
                self.values[desc.uid] = value
            rewards.extend(state.rewards)
        flags = [state.done for state in states]
        self.episode_over = any(c.episode_done(flags) for c in self.conditions)
        self.steps += 1
        return rewards

    async def run_episode(self) -> None:
        raise NotImplementedError
