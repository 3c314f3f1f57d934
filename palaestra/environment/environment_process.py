"""The environment process: plays the worker's games of one environment and records them.

It hosts the worker's :class:`~palaestra.environment.world.World` s (one, or
``phase_config.envs_per_worker``). The simulation controller talks to it over ZMQ (start,
reset, step, play the games). The Muscles of the worker link to it
(:mod:`palaestra.core.wire.channel`): their set points arrive on those links, and when the
environment drives the episodes (:mod:`palaestra.environment.lanes`) its observations go out
on them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import msgspec
import zmq

from palaestra.core.description import names
from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.liveness import waited, waiting
from palaestra.core.plugin import PluginError
from palaestra.core.rounds import Kept
from palaestra.core.supervision.esm import Component, ComponentRuntime
from palaestra.core.supervision.hotloop import HotLoop, Stopped, closing_producer, run_hot
from palaestra.core.supervision.watch import Waiting, watch
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, Listener, PeerGone, send_then
from palaestra.core.wire.records import RowSink, connect_store
from palaestra.core.wire.transport import endpoint_for, link_for, with_link
from palaestra.environment.aio import Awaiter
from palaestra.environment.batch import Batch, stepped_in_batches
from palaestra.environment.lanes import made, play_lanes, restart_worlds, step_worlds
from palaestra.environment.world import World, same_world

LOG = logging.getLogger(__name__)


def started(start: Callable[[m.EnvStart], m.EnvBaseline], message: m.EnvStart) -> m.EnvBaseline:
    """``start(message)``: the worlds' first start (``start_environment()``: a co-simulation
    starting), which belongs to the phase's start. It is no step for the executor's liveness
    judge (``answer_timeout``): the controller waits for it within ``start_timeout`` (see
    :class:`~palaestra.core.wire.messages.SimulationSetup`). A reset is a step."""
    if message.reset:
        return start(message)
    working = waiting()
    try:
        return start(message)
    finally:
        waited(working)


class EnvironmentProcess(Component):
    """The process of one environment for one worker: its games, the controller's requests,
    the Muscles' links."""

    def __init__(
        self,
        name: str,
        *,
        environment: EnvironmentSpec,
        environment_id: int,
        worker: int,
        seed: int,
        store_endpoint: str | None,
        phase_id: int = 0,
        answer_timeout: float = 300.0,
        run_uid: str = "",
        instance_uid: str = "",
        phase_index: int = 0,
        data_path: str = "",
        record_every: int = 1,
        lane_seeds: Sequence[int] = (),
    ) -> None:
        super().__init__(name)
        lanes = len(lane_seeds)
        if lanes > 1:  # the worker's games, seen as workers worker * N + i (see lanes)
            worker = worker * lanes
        # waiting for the set points of a Muscle (named when we wait): it speaks after its
        # Brain would have, before the simulation controller would blame us
        self.muscles = Waiting(
            "Muscle", answer_timeout, grace=max(1.0, min(5.0, answer_timeout / 2))
        )
        self.links: dict[str, Channel] = {}  # by Muscle process name
        self._polled: list[Any] = []
        self.answer_timeout = answer_timeout
        # awaits what an asynchronous environment returns, on one loop for the process
        self.awaiter = Awaiter(name)
        self.store_endpoint = store_endpoint
        self.kept = Kept()  # what the rounds of the games it drives keep over the phase
        self.games = [
            World(
                name,
                environment=environment,
                environment_id=environment_id,
                worker=worker + i,
                seed=game_seed,
                awaiter=self.awaiter,
                answer_timeout=answer_timeout,
                phase_id=phase_id,
                run_uid=run_uid,
                instance_uid=instance_uid,
                phase_index=phase_index,
                data_path=data_path,
                record_every=record_every,
            )
            for i, game_seed in enumerate(lane_seeds if lanes > 1 else [seed])
        ]
        self.world = self.games[0]  # the one a controller that drives the episodes steps
        # its games stepped at once, where the class can (every round, whoever plays it)
        self.batch = Batch(self.world) if stepped_in_batches(self.games) else None

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        self.runtime = runtime
        endpoint = endpoint_for(runtime.run_dir, names.endpoint(self.name, "env"))
        self.listener = Listener(link_for(endpoint))  # bound before anyone is told of it
        link = runtime.links.listen(self.listener)  # its gateway, in a run across hosts
        loop = HotLoop(runtime, self.name)
        router, announced = loop.bind(zmq.ROUTER, endpoint)
        self.hot = run_hot(runtime, self.name, lambda hot: self._serve(hot, router), loop)
        steppings = [game.stepping for game in self.games]
        runtime.start_task(watch([self.muscles, *steppings]))
        return {"env": with_link(announced, link)}

    def _serve(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        """The hot loop: step when the expected Muscles' set points are in; record each step."""
        hot.own(self.listener)
        socket = connect_store(hot, self.store_endpoint)
        for game in self.games:  # (their rows share the process's socket to the store)
            out = game.out
            out.rows = RowSink(
                socket, "world_states", plugin=(game.env, "update"), shape=out.row_values
            )
            out.records = RowSink(
                socket, "plugin_records", plugin=(game.env, "record"), shape=out.record_values
            )
        self.selector = hot.selector()
        self.selector.add(self.listener)
        wait = hot.poller(router)
        first, *sinks = [s for game in self.games for s in (game.out.rows, game.out.records)]
        with closing_producer(first, self.name, *sinks):
            try:
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
                            self._from_link(item)
            except Stopped:  # the phase is over: so is each game's episode
                for game in self.games:
                    game.record_last()
                raise

    def _control(self, hot: HotLoop, router: zmq.Socket[bytes]) -> None:
        sender, payload = router.recv_multipart()
        message = m.decode(payload)
        if isinstance(message, m.EnvStart):  # (the first start: see started)
            router.send_multipart([sender, m.encode(started(self.start_worlds, message))])
        elif isinstance(message, m.EnvLanes):
            over = play_lanes(self, hot, message, router, sender)
            router.send_multipart([sender, m.encode(over)])
        else:
            raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    def start_worlds(self, message: m.EnvStart) -> m.EnvBaseline:
        """Start (or restart) every game's world; the first game's baseline, with each game's
        episode and values."""
        baseline = self.world.start_world(message.reset, message.check_values)
        for game in self.games[1:]:
            game.start_world(message.reset, message.check_values)
            same_world(self.world, game)
        if message.episode is not None:  # a resumed worker's first episode
            for game in self.games:
                game.episode = message.episode
        return msgspec.structs.replace(
            baseline,
            episodes=[game.episode for game in self.games],
            games=[game.last_values for game in self.games],
        )

    def _games(self, indices: Iterable[int]) -> m.EnvBaseline:
        """The episode and sensor values of these games (restarted)."""
        games = [self.games[i] for i in indices]
        return m.EnvBaseline(
            sensors=[],
            actuators=[],
            episodes=[game.episode for game in games],
            games=[game.last_values for game in games],
        )

    def _accept(self, hot: HotLoop, wait: bool = False) -> None:
        """Take a Muscle's link: one that is pending, or (``wait``) the next one."""
        link = hot.accept(self.listener, wait)
        if link is not None:
            self.links[link.peer] = link
            self.selector.add(link)

    def _from_link(self, link: Channel) -> None:
        """A message on a link: the rounds of a simulation controller that plays the games
        (its link is one of them); a Muscle's link is silent outside the rounds this process
        plays itself (one that hung up is dropped: see channel)."""
        try:
            message = m.decode(link.recv())
        except PeerGone:
            self.selector.discard(link)
            return
        held: list[Callable[[], None]] = []  # the step's rows, made once the answer is out
        send_then(partial(self._answer, link, message, held), partial(made, held))

    def _answer(self, link: Channel, message: m.Message, held: list[Callable[[], None]]) -> None:
        """Answer the controller's ``message`` on ``link``; the rows of the games stepped go
        to ``held`` (a failure on the way keeps those of the games stepped before it)."""
        if isinstance(message, m.EnvRound):
            states = step_worlds(
                self.games,
                self.batch,
                list(zip(message.games, message.setpoints, message.stop, strict=True)),
                message.late_by,
                held,
            )
            answer: m.Msg = m.EnvRoundDone(states=states)
        elif isinstance(message, m.EnvRestart):
            restart_worlds(self.games, message.games)
            answer = self._games(message.games)
        else:
            raise TypeError(f"{self.name}: {type(message).__name__} from {link.peer}")
        try:
            link.send(m.encode(answer))
        except PeerGone:  # its parent reports why
            self.selector.discard(link)

    def link_to(self, hot: HotLoop, process: str) -> Channel:
        """The link of Muscle ``process`` (it linked when its episode began)."""
        while process not in self.links:
            self._accept(hot, wait=True)
        return self.links[process]

    async def close(self) -> None:
        await self.hot.stop()  # the loop pushes its last rows and closes the producer

    async def teardown(self) -> None:
        if hasattr(self, "runtime"):  # (the parent names the call, should the stop be late)
            shutdown = PluginError(self.world.env, "shutdown").plugin
            await self.runtime.send_parent(m.Busy(call=f"{shutdown}()"))
        await asyncio.to_thread(self.shutdown_world)

    def shutdown_world(self) -> None:
        """Each game's ``shutdown`` (a coroutine awaited within ``answer_timeout``), then
        what an asynchronous environment left running on its loop is cancelled. The process
        sent its last rows: a record made there fails the call (``PluginRecorder.end``)."""
        try:
            for game in self.games:
                game.out.recorder.end("record it at a step (start_environment(), update())")
                game.shutdown(self.answer_timeout)
        finally:
            left = self.awaiter.close()
            if left:
                LOG.debug("%s: cancelled %s at shutdown", self.name, ", ".join(left))
