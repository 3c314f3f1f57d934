"""The worker's games of one environment process, played by the process itself or stepped for
the simulation controller.

With ``envs_per_worker: N`` the environment process of worker ``w`` hosts N instances of the
environment (its *games*, :class:`~palaestra.environment.world.World` s), seeded each with its
own seed; game ``i`` is recorded as worker ``w * N + i`` (its *lane*). When the phase's one
environment drives its episodes, :func:`play_lanes` plays its games in rounds over its links to
the Muscles (:func:`palaestra.core.rounds.play_rounds`, the one per-round path); when the
simulation controller drives them (several environments in the phase, or ``driver:
controller``), it plays the same rounds and asks each environment to step its games
(:func:`step_worlds`) and to restart those whose episode ended. One game (``envs_per_worker``
1) is played the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import zmq

from palaestra.core.rounds import Kept, Move, play_rounds
from palaestra.core.supervision.hotloop import HotLoop
from palaestra.core.supervision.watch import Waiting
from palaestra.core.turns import ONE, Stepped
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, PeerGone, Selector
from palaestra.environment.batch import Batch
from palaestra.environment.world import World


class Host(Protocol):
    """The environment process as the rounds of its games use it
    (:class:`~palaestra.environment.environment_process.EnvironmentProcess`)."""

    name: str
    games: list[World]  # the worker's games
    batch: Batch | None  # steps them at once, where their class can
    muscles: Waiting  # names the Muscle whose answer is awaited
    selector: Selector  # the links it polls (a Muscle that hung up leaves it)
    kept: Kept  # what its rounds keep over the phase's plays

    def link_to(self, hot: HotLoop, process: str) -> Channel:
        """The link of Muscle ``process``."""


class Worlds:
    """The worlds of an environment process's games, as a :class:`~palaestra.core.rounds.Table`
    of the rounds it plays itself (``acts_here``: by agent, whether it acts on them)."""

    def __init__(self, games: list[World], batch: Batch | None, acts_here: list[bool]) -> None:
        self.games = games
        self.batch = batch  # (the process's: see step_worlds)
        self.acts_here = acts_here
        self.held: list[Callable[[], None]] = []  # rows made once the round is sent
        self.own: dict[str, str] = {}  # the environment's own id of each full actuator uid

    def count(self) -> int:
        return len(self.games)

    def start(self, game: int) -> tuple[int, int, dict[str, Any]]:
        world = self.games[game]
        return world.worker, world.episode, world.sensor_values()

    def restart(self, games: list[int]) -> None:
        restart_worlds(self.games, games)

    def step(self, moves: list[Move], late_by: float | None) -> list[Stepped]:
        # (the rows of the last step are made, by sent, before a game steps again)
        assert not self.held, "a round's rows are made before its games step again"
        acts_here, own = self.acts_here, self.own
        local = []
        for index, chosen in moves:
            merged: dict[str, Any] = {}
            stop = False
            for agent, points, stops in chosen:
                if acts_here[agent]:  # (by the environment's own ids)
                    for uid, value in points.items():
                        mine = own.get(uid)
                        if mine is None:
                            mine = own[uid] = uid.partition(".")[2]
                        merged[mine] = value
                stop = stop or stops
            local.append((index, merged, stop))
        games = self.games
        if self.batch is not None and local:  # (made as the rounds take them: no EnvState)
            return self.batch.stepped(_batched(games, local, late_by), self.held)
        states = step_worlds(games, None, local, late_by, self.held)
        one = ONE
        return [  # (a state has a value for each sensor uid, in their order: zip, not strict)
            Stepped(
                zip(games[move[0]].declared.full_sensor_uids, state.values),  # noqa: B905
                state.rewards,
                one.get(state.done) or [state.done],
                one.get(state.terminated) or [state.terminated],
                one.get(state.truncated) or [state.truncated],
            )
            for move, state in zip(local, states, strict=True)
        ]

    def sent(self) -> None:
        made(self.held)


def made(held: list[Callable[[], None]]) -> None:
    """Make what waited for a round's observations to be out (its rows), in order."""
    while held:  # (each taken before it runs: one that fails is not run again)
        held.pop(0)()


def restart_worlds(worlds: list[World], games: Sequence[int]) -> None:
    """Start the next episode of each of ``games`` (their episode is over)."""
    for index in games:
        world = worlds[index]
        world.start_world(True, world.declared.check_rewards)


def step_worlds(
    worlds: list[World],
    batch: Batch | None,
    moves: Sequence[tuple[int, dict[str, Any], bool]],
    late_by: float | None,
    held: list[Callable[[], None]] | None = None,
) -> list[m.EnvState]:
    """Step each move's world (its index, its set points by the environment's own ids,
    whether an agent asked the step to be the game's last) at once (``batch``, the class's
    ``update_batch``) or one by one; each world's state. With ``held``, the steps' rows are
    left there to be made once the states are sent, before the worlds step or restart again
    (see :meth:`World.update` and :meth:`Batch.step`)."""
    if batch is not None and moves:
        return batch.step(_batched(worlds, moves, late_by), held)
    states = []
    for index, setpoints, stop in moves:
        world = worlds[index]
        world.late_by = late_by
        if stop:  # an agent reached its objective rule: the game's step is its last
            world.stop_requested = True
        states.append(world.update(setpoints, held))
    return states


def _batched(
    worlds: list[World], moves: Sequence[tuple[int, dict[str, Any], bool]], late_by: float | None
) -> list[tuple[World, dict[str, Any], bool]]:
    """The moves of a round stepped in one batch, by world (each told how late it steps)."""
    for index, _, _ in moves:
        worlds[index].late_by = late_by
    return [(worlds[index], points, stop) for index, points, stop in moves]


class _Links:
    """The Muscles as the process's rounds reach them: over their links
    (:class:`~palaestra.core.rounds.Players`)."""

    def __init__(self, process: Host, hot: HotLoop, agents: Sequence[m.EpisodeAgent]) -> None:
        self.name = process.name
        self.process = process
        self.hot = hot
        self.links = [process.link_to(hot, a.process) for a in agents]
        self.names = [a.process for a in agents]

    def send(self, agent: int, data: bytes) -> None:
        link = self.links[agent]
        try:
            link.send(data)
        except PeerGone:  # its parent reports why; we wait for it until told to stop
            self.process.selector.discard(link)

    def receive(self, agent: int) -> bytes:
        waiting = self.process.muscles
        waiting.name = self.names[agent]
        waiting.begin()
        try:
            data = self.links[agent].recv()
        except PeerGone:
            self.hot.idle()  # its parent reports why
        waiting.end()
        return data

    def ready(self, agent: int) -> bool:
        return self.links[agent].ready()


def play_lanes(
    process: Host,
    hot: HotLoop,
    message: m.EnvLanes,
    router: zmq.Socket[bytes],
    controller: bytes,
) -> m.EnvLanesDone:
    """Play the worker's games as ``message`` says, over the links to the Muscles; each
    episode's end goes to the ``controller`` (its id on ``router``) once every agent
    answered the round that told them of it. Returns the answer to ``message``."""

    def tell(done: m.LaneEpisodeDone) -> None:
        router.send_multipart([controller, m.encode(done)])

    players = _Links(process, hot, message.agents)
    table = Worlds(process.games, process.batch, [a.acts_here for a in message.agents])
    return play_rounds(
        table, players, message, process.kept, lambda seconds: hot.sleep(seconds), tell
    )
