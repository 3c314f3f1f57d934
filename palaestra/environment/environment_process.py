"""The environment process: runs one Environment for one worker and records world states.

The simulation controller talks to it over ZMQ (start, reset, step, run an episode). The
Muscles of the worker link to it (:mod:`palaestra.core.channel`): their set points arrive on
those links, and in an episode the environment drives itself, its observations go out on them.
"""

from __future__ import annotations

import inspect
from typing import Any

import zmq

from palaestra.core import messages as m
from palaestra.core.channel import Channel, Listener, PeerGone
from palaestra.core.codec import describe
from palaestra.core.esm import Component
from palaestra.core.hotloop import HotLoop, closing_producer, run_hot
from palaestra.core.information import ActuatorInformation, json_value
from palaestra.core.loading import load_class
from palaestra.core.records import RowSink, connect_store
from palaestra.core.runtime import PluginError
from palaestra.core.specs import ClassSpec, EnvironmentSpec
from palaestra.core.termination import EpisodeEndsWithEnvironment, TerminationCondition
from palaestra.core.transport import endpoint_for, link_for
from palaestra.core.watch import Waiting, watch
from palaestra.environment.environment import Environment, EnvironmentContext


def construct(spec: EnvironmentSpec, seed: int) -> Environment:
    """Instantiate the environment with its params (and ``uid``/``seed`` if it takes them)."""
    cls = load_class(spec.name)
    kwargs = dict(spec.params)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    for key, value in (("uid", spec.uid), ("seed", seed), ("broker_uri", "")):
        if key in accepted or takes_any:
            kwargs.setdefault(key, value)
    try:
        return cls(**kwargs)  # type: ignore[no-any-return]
    except Exception as exc:
        raise PluginError(cls, "__init__") from exc


class EnvironmentProcess(Component):
    def __init__(
        self,
        name: str,
        *,
        environment: EnvironmentSpec,
        environment_id: int,
        worker: int,
        seed: int,
        store_endpoint: str | None,
        answer_timeout: float = 300.0,
    ) -> None:
        super().__init__(name)
        # waiting for the set points of a Muscle (named when we wait): it speaks after its
        # Brain would have, before the simulation controller would blame us
        self.muscles = Waiting(
            "Muscle", answer_timeout, grace=max(1.0, min(5.0, answer_timeout / 2))
        )
        self.expected: list[str] | None = None
        self.controller = b""
        self.pending: dict[str, dict[str, Any]] = {}
        self.links: dict[str, Channel] = {}  # by Muscle process name
        self._polled: list[Any] = []
        self.values: list[Any] = []
        # our own plug-in's step: if it never returns, we say so ourselves
        self.stepping = Waiting(name, answer_timeout)
        self.spec = environment
        self.environment_id = environment_id
        self.worker = worker
        self.env = construct(environment, seed)
        self.env.attach(EnvironmentContext(uid=environment.uid, worker=worker, seed=seed))
        self.store_endpoint = store_endpoint
        self.actuators: list[ActuatorInformation] = []
        self.sensor_index: dict[str, int] = {}
        self.sensor_uids: list[str] = []
        self.full_sensor_uids: list[str] = []
        self.prefix = f"{environment.uid}."
        self.episode = -1
        self.step = 0

    async def setup(self, runtime: Any) -> dict[str, str]:
        endpoint = endpoint_for(runtime.run_dir, f"{self.name}-env")
        self.listener = Listener(link_for(endpoint))  # bound before anyone is told of it
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, endpoint))
        runtime.start_task(watch([self.muscles, self.stepping]))
        return {"env": endpoint}

    def _serve(self, hot: HotLoop, endpoint: str) -> None:
        """The hot loop: step when the expected Muscles' set points are in; record each step."""
        hot.own(self.listener)
        router = hot.socket(zmq.ROUTER)
        router.bind(endpoint)
        self.rows = RowSink(
            connect_store(hot, self.store_endpoint),
            lambda rows: m.WorldStateRows(
                environment_id=self.environment_id, worker=self.worker, rows=rows
            ),
            plugin=(self.env, "update"),
        )
        self.selector = hot.selector()
        self.selector.add(self.listener)
        wait = hot.poller(router)
        with closing_producer(self.rows, self.name):
            while True:
                links = self.selector.items()
                if links != self._polled:  # a Muscle linked or hung up
                    self._polled, wait = links, hot.poller(router, *links)
                for item in wait():
                    if item is router:
                        self._control(hot, router)
                    elif item is self.listener:
                        self._accept(hot)
                    elif isinstance(item, Channel):
                        self._take_actions(item)
                if self._all_in():
                    router.send_multipart([self.controller, m.encode(self.update())])

    def _control(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        sender, payload = router.recv_multipart()
        message = m.decode(payload)
        if isinstance(message, m.EnvStep):
            self.controller = sender
            self.expected = message.expect
        elif isinstance(message, m.EnvStart):
            router.send_multipart([sender, m.encode(self.start_world(message.reset))])
        elif isinstance(message, m.EnvEpisode):
            done = m.EnvEpisodeDone(steps=self.run_episode(hot, message))
            router.send_multipart([sender, m.encode(done)])
        else:
            raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    def _accept(self, hot: HotLoop, wait: bool = False) -> None:
        """Take a Muscle's link: one that is pending, or (``wait``) the next one."""
        link = hot.accept(self.listener, wait)
        if link is not None:
            self.links[link.peer] = link
            self.selector.add(link)

    def _take_actions(self, link: Channel) -> None:
        """Read a Muscle's set points (a Muscle that hung up is dropped: see channel)."""
        try:
            action = m.decode(link.recv())
        except PeerGone:
            self.selector.discard(link)
            return
        if not isinstance(action, m.AgentActions):
            raise TypeError(f"{self.name}: {type(action).__name__} from {link.peer}")
        self.pending[link.peer] = action.setpoints

    def start_world(self, reset: bool) -> m.EnvBaseline:
        method = "reset" if reset else "start_environment"
        try:
            sensors, actuators = tuple(getattr(self.env, method)())[:2]
        except Exception as exc:
            raise PluginError(self.env, method) from exc
        self.episode += 1
        self.step = 0
        self.actuators = list(actuators)
        self.sensor_uids = [str(s.uid) for s in sensors]
        self.sensor_index = {uid: i for i, uid in enumerate(self.sensor_uids)}
        prefix = self.prefix
        self.full_sensor_uids = [prefix + uid for uid in self.sensor_uids]
        baseline = m.EnvBaseline(
            sensors=[describe(s, prefix + str(s.uid)) for s in sensors],
            actuators=[describe(a, prefix + str(a.uid)) for a in actuators],
        )
        self.values = [desc.value for desc in baseline.sensors]
        return baseline

    def _all_in(self) -> bool:
        """Whether the step can be taken; else note which Muscle we are waiting for."""
        expected = self.expected
        if expected is None:
            return False
        pending = self.pending
        for name in expected:
            if name not in pending:
                self.muscles.name = name
                if not self.muscles.since:
                    self.muscles.begin()
                return False
        self.muscles.end()
        return True

    def _collected(self) -> dict[str, Any]:
        """The expected Muscles' set points, merged in the controller's order."""
        pending = self.pending
        setpoints: dict[str, Any] = {}
        for name in self.expected or ():
            setpoints.update(pending.pop(name))
        self.expected = None
        return setpoints

    def update(self, setpoints: dict[str, Any] | None = None) -> m.EnvState:
        """Apply set points (by default: the expected Muscles') and step the world."""
        if setpoints is None:
            setpoints = self._collected()
        self.stepping.begin()
        actuators = []
        for template in self.actuators:
            uid = str(template.uid)
            space = template.space
            if uid in setpoints:
                value = setpoints[uid]
                value = space.from_json_value(value) if space is not None else value
            else:
                value = template.value
            actuators.append(ActuatorInformation(value, space, uid))
        try:
            state = tuple(self.env.update(actuators))
        except Exception as exc:
            raise PluginError(self.env, "update") from exc
        self.stepping.end()
        sensors, rewards, done = state[0], state[1], bool(state[2])
        values: list[Any] = [None] * len(self.sensor_uids)
        for sensor in sensors:
            index = self.sensor_index.get(str(sensor.uid))
            if index is not None:
                values[index] = json_value(sensor)
        reward_descs = [describe(r) for r in rewards]
        self.step += 1
        self.rows.add(
            m.WorldStateRow(
                self.episode,
                self.step,
                dict(zip(self.full_sensor_uids, values, strict=True)),
                {self.prefix + uid: value for uid, value in setpoints.items()},
                {r.uid: r.value for r in reward_descs},
                done,
            )
        )
        return m.EnvState(values=values, rewards=reward_descs, done=done)

    def run_episode(self, hot: HotLoop, message: m.EnvEpisode) -> int:
        """Drive one episode: observations straight to the Muscles, their set points back.

        The same order and rewards as the simulation controller's own loop (Vanilla: every
        agent acts on every step; TakingTurns: one agent per step, rewarded with the step that
        followed its action), two messages per agent and step fewer.
        """
        links = {a.process: self._link(hot, a.process) for a in message.agents}
        conditions = self._conditions(message.conditions)
        values = dict(zip(self.full_sensor_uids, self.values, strict=True))
        rewards: dict[str, list[m.InfoDesc] | None] = {a.process: None for a in message.agents}
        step = 0
        take = self._take_actions
        wait = self.selector.wait

        def observe(agent: m.EpisodeAgent, done: bool) -> None:
            observation = m.AgentStep(
                step=step,
                values=[values[uid] for uid in agent.sensors],
                rewards=rewards[agent.process],
                done=done,
            )
            try:
                links[agent.process].send(m.encode(observation))
            except PeerGone:  # its parent reports why; we wait for it until told to stop
                self.selector.discard(links[agent.process])

        while True:
            acting = (
                message.agents
                if message.turns == "all"
                else [message.agents[step % len(message.agents)]]
            )
            for agent in acting:
                observe(agent, done=False)
            self.expected = [a.process for a in acting if a.acts_here]
            while not self._all_in():
                for link in wait():
                    if link is self.listener:
                        self._accept(hot)
                    else:
                        take(link)
            state = self.update()
            values.update(zip(self.full_sensor_uids, state.values, strict=True))
            for agent in acting:
                rewards[agent.process] = state.rewards
            step += 1
            if any(c.episode_done([state.done]) for c in conditions):
                break
        for agent in message.agents:  # the last transitions, with done
            observe(agent, done=True)
        for agent in message.agents:  # each acknowledges the end of its episode
            link = links[agent.process]
            try:
                link.recv()
            except PeerGone:
                hot.idle()
        return step

    def _link(self, hot: HotLoop, process: str) -> Channel:
        """The link of Muscle ``process`` (it linked when its episode began)."""
        while process not in self.links:
            self._accept(hot, wait=True)
        return self.links[process]

    def _conditions(self, specs: list[ClassSpec]) -> list[TerminationCondition]:
        conditions = [load_class(c.name)(**c.params) for c in specs]
        if not any(
            type(c).episode_done is not TerminationCondition.episode_done for c in conditions
        ):
            conditions.append(EpisodeEndsWithEnvironment())
        return conditions

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        try:
            self.env.shutdown()
        except Exception as exc:
            raise PluginError(self.env, "shutdown") from exc
