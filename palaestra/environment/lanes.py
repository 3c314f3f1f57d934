"""Several games in one environment process (``phase_config.envs_per_worker``), stepped in rounds.

With ``envs_per_worker: N`` the environment process of worker ``w`` hosts N instances of the
environment (its *games*), seeded each with its own seed. Game ``i`` is recorded as worker
``w * N + i`` (its *lane*): its ``world_states``, ``muscle_actions`` and ``episodes`` rows are
those a worker of its own would write. :func:`play_lanes` plays them in rounds, in two
groups (of 4 games at least; one group when paced) whose rounds overlap: a group's round sends
each Muscle that acts in one of its games one :class:`~palaestra.core.messages.AgentSteps` with
its observations of those games (and of the episodes that ended), takes one
:class:`~palaestra.core.messages.LaneActions` back from each, and steps each of those games
once, while the Muscles act in the other group's games. A game
whose episode ended resets once every agent answered the round that told it so (its rows are
in) and plays on, as gymnasium's vector environments reset theirs, until it played
``episodes`` episodes of its own (or the phase's conditions end its phase, or an agent's Brain
reached its phase rule): each game plays what a worker plays. Each game follows the phase's
order of turns (:class:`~palaestra.core.turns.Game`). One game (``envs_per_worker`` 1, an
episode the environment drives) is played the same way: this is the one per-round path.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import zmq

from palaestra.core import messages as m
from palaestra.core.channel import Channel, PeerGone, Selector
from palaestra.core.hotloop import HotLoop
from palaestra.core.loading import load_class
from palaestra.core.pacing import Pacer
from palaestra.core.plugin import call
from palaestra.core.termination import (
    PhaseEndsAfterEpisodes,
    TerminationCondition,
    decides_phases,
    episode_conditions,
)
from palaestra.core.turns import Game, Stepped, TurnPolicy
from palaestra.core.watch import Waiting
from palaestra.environment.batch import Batch, stepped_in_batches
from palaestra.environment.world import World

GROUPS = 2
"""Groups of a worker's games whose rounds overlap (see :func:`play_lanes`)."""
GROUP_MIN = 4
"""Games per group at least: fewer games play in one group (one round at a time)."""


class Host(Protocol):
    """The environment process as the rounds of its games use it
    (:class:`~palaestra.environment.environment_process.EnvironmentProcess`)."""

    name: str
    games: list[World]  # the worker's games
    muscles: Waiting  # names the Muscle whose answer is awaited
    selector: Selector  # the links it polls (a Muscle that hung up leaves it)
    pacer: Pacer | None  # of paced rounds, kept over the phase's messages
    played: list[int] | None  # each game's episodes so far, kept likewise
    conditions: list[list[TerminationCondition]] | None  # each game's, kept likewise

    def link_to(self, hot: HotLoop, process: str) -> Channel:
        """The link of Muscle ``process``."""


class Lane:
    """One game of the worker as the rounds see it: its world, its episode (a
    :class:`~palaestra.core.turns.Game`), the episodes it played and its phase's conditions."""

    __slots__ = ("index", "world", "game", "done", "until", "started", "phase_conditions")

    def __init__(
        self,
        index: int,
        world: World,
        policy: TurnPolicy,
        agents: Sequence[m.EpisodeAgent],
        conditions: list[TerminationCondition],
    ) -> None:
        self.index = index
        self.world = world
        self.phase_conditions = [c for c in conditions if decides_phases(c)]
        self.phase_conditions = self.phase_conditions or [PhaseEndsAfterEpisodes()]
        self.game = Game(policy, agents, episode_conditions(conditions), self._values())
        self.done = 0  # episodes this game played
        self.until = 0  # it stops at this many (0: its phase's conditions alone stop it)
        self.started = time.time()

    def _values(self) -> dict[str, Any]:
        world = self.world
        return dict(zip(world.full_sensor_uids, world.values, strict=True))

    def begin(self) -> None:
        """The game's world was restarted: a new episode from its baseline."""
        self.game.begin(self._values())
        self.started = time.time()

    def phase_over(self, episodes: int) -> bool:
        return any(call(c.phase_done, self.done, episodes) for c in self.phase_conditions)

    def stops(self, episodes: int) -> bool:
        """Whether the game plays no further episode (it reached :attr:`until` or the end of
        its phase)."""
        return bool(self.until and self.done >= self.until) or self.phase_over(episodes)


class _Round:
    """The observations of one round: each agent's, by game, and who acts in which game."""

    __slots__ = ("seen", "acting", "restarts", "ends")

    def __init__(self, agents: dict[str, int]) -> None:
        # per agent (by its index): the games, their episodes and the observations
        self.seen: list[tuple[list[int], list[int], list[m.AgentStep]]] = [
            ([], [], []) for _ in agents
        ]
        # the games that step after the round, each with (agent, position) of those acting
        self.acting: list[tuple[Lane, list[tuple[int, int]]]] = []
        self.restarts: list[Lane] = []  # games whose episode ended in it and that play on
        self.ends: list[bytes] = []  # what the controller is told of them, once answered

    def has_work(self) -> bool:
        """Whether the round has an observation, or a game to step (also a step in which no
        agent acts)."""
        return bool(self.acting) or any(lanes for lanes, _, _ in self.seen)

    def add(self, lane: Lane, agents: dict[str, int], done: bool) -> None:
        """Add the game's observations: of the agents that act on its step or (``done``)
        every agent's last of the episode."""
        game = lane.game
        episode = lane.world.episode
        acting: list[tuple[int, int]] = []
        for agent, seen in game.last() if done else game.observations():
            index = agents[agent.process]
            lanes, episodes, steps = self.seen[index]
            if not done:
                acting.append((index, len(lanes)))
            lanes.append(lane.index)
            episodes.append(episode)
            steps.append(seen)
        if not done:
            self.acting.append((lane, acting))


def play_lanes(
    process: Host,
    hot: HotLoop,
    message: m.EnvLanes,
    router: zmq.Socket[bytes],
    controller: bytes,
) -> m.EnvLanesDone:
    """Play the worker's games until each is over; each episode's end goes to the
    ``controller`` (its id on ``router``) once every agent answered the round that told them
    of it (their last rows of the episode are pushed by then: a run killed between the two
    stores no episode without its agents' rows). Returns the answer to ``message``.

    The games are played in :data:`GROUPS` groups (of :data:`GROUP_MIN` games at least)
    whose rounds overlap: while the Muscles act in one group's games, the other group's games
    step; each game still steps once per answer to its own observation, so what each game
    does is the same. (On two cores this plays 64 games about 1.5 times as fast as one
    group.) An agent with no observation in a round is not asked. The last message goes to
    every agent, has no game and ``last`` set.
    """
    play = _Play(process, hot, message, lambda done: router.send_multipart([controller, done]))
    links = play.links
    if message.step_rate > 0:  # one group: each round is a step of each of its games
        play.pacer = process.pacer = process.pacer or Pacer(message.step_rate, hot.sleep)
        play.pacer.begin()
    groups = 1 if play.pacer else max(1, min(GROUPS, len(play.lanes) // GROUP_MIN))
    size = -(-len(play.lanes) // groups)  # (rounded up)
    pending: deque[_Round] = deque()
    for first in range(0, len(play.lanes), size):
        current = _Round(play.index)
        for lane in play.lanes[first : first + size]:
            if not lane.stops(message.episodes):
                current.add(lane, play.index, False)
        if current.has_work():
            _send(process, links, current, False)
            pending.append(current)
    while pending:
        following = play.round(pending.popleft())
        if following.has_work():
            _send(process, links, following, False)
            pending.append(following)
    last = _Round(play.index)
    _send(process, links, last, True)
    _answers(process, hot, play.agents, links, last, True)
    return play.over()


class _Play:
    """The games of an environment process and the agents that play them."""

    def __init__(
        self,
        process: Host,
        hot: HotLoop,
        message: m.EnvLanes,
        tell: Callable[[bytes], object],
    ) -> None:
        self.process = process
        self.hot = hot
        self.pacer: Pacer | None = None  # (paced rounds)
        self.agents = message.agents
        self.index = {a.process: i for i, a in enumerate(self.agents)}
        self.episodes = message.episodes
        self.links = [process.link_to(hot, a.process) for a in self.agents]
        self.acts_here = [a.acts_here for a in self.agents]
        policy: TurnPolicy = call(load_class(message.policy))
        if process.conditions is None:  # each game its own, kept over the phase's messages
            process.conditions = [
                [call(load_class(c.name), **c.params) for c in message.conditions]
                for _ in process.games
            ]
        self.lanes = [
            Lane(i, world, policy, self.agents, conditions)
            for i, (world, conditions) in enumerate(
                zip(process.games, process.conditions, strict=True)
            )
        ]
        self.evaluation = message.evaluation
        if message.evaluation:  # one rollout each
            for lane in self.lanes:
                lane.until, lane.phase_conditions = 1, []
        else:  # each game's episodes so far: counted on over the phase's messages
            played = process.played or [message.first_episode] * len(self.lanes)
            for lane, done in zip(self.lanes, played, strict=True):
                lane.done, lane.until = done, message.until
        self.tell = tell
        self.steps = 0
        self.end_phase = False  # an agent's Brain reached its phase rule
        self.batch = Batch(process.games[0]) if stepped_in_batches(process.games) else None

    def over(self) -> m.EnvLanesDone:
        """The answer once the games stopped (each game's episodes kept for the next)."""
        lanes, episodes = self.lanes, self.episodes
        if not self.evaluation:
            self.process.played = [lane.done for lane in lanes]
        return m.EnvLanesDone(
            steps=self.steps,
            end_phase=self.end_phase,
            reached=any(lane.until and lane.done >= lane.until for lane in lanes),
            over=all(lane.phase_over(episodes) for lane in lanes),
        )

    def round(self, current: _Round) -> _Round:
        """Take the agents' answers to ``current`` (paced: when its step is due), step every
        game that acted in it; the observations of the next round."""
        late_by = None
        pacer = self.pacer
        if pacer is not None and current.acting:  # the agents think while it waits
            if all(lane.game.step == 0 for lane, _ in current.acting):
                pacer.begin()  # (its games' episodes begin: the first step is due at once)
            pacer.wait()
            asked = [link for link, seen in zip(self.links, current.seen, strict=True) if seen[0]]
            held = not all(link.ready() for link in asked)  # late if their answers are
            answers = _answers(self.process, self.hot, self.agents, self.links, current)
            late_by = pacer.delayed() if held else pacer.late_by
        else:
            answers = _answers(self.process, self.hot, self.agents, self.links, current)
        self.end_phase = self.end_phase or any(a.end_phase for a in answers if a is not None)
        for told in current.ends:  # (the agents' last rows of the episode are out before)
            self.tell(told)
        following = _Round(self.index)
        if not self.end_phase:  # every agent saw their episodes' end: the next begin
            for lane in current.restarts:
                world = lane.world
                world.start_world(True, world.check_rewards)
                lane.begin()
                following.add(lane, self.index, False)
        self._step(current, answers, late_by, following)
        return following

    def _step(
        self,
        current: _Round,
        answers: list[m.LaneActions | None],
        late_by: float | None,
        following: _Round,
    ) -> None:
        """Step every game that acted in ``current`` with its agents' set points (``late_by``:
        how late the round's step began, paced); add their next observations to
        ``following``."""
        acts_here = self.acts_here
        moves: list[tuple[Lane, dict[str, Any], bool]] = []
        for lane, acting in current.acting:
            setpoints: dict[str, Any] = {}
            stop = False
            for agent, position in acting:
                answer = answers[agent]
                assert answer is not None
                if acts_here[agent]:  # (by the environment's own ids)
                    for uid, value in answer.setpoints[position].items():
                        setpoints[uid.partition(".")[2]] = value
                stop = stop or answer.stop[position]
            lane.world.late_by = late_by
            moves.append((lane, setpoints, stop))
        if self.batch is not None and moves:
            states = self.batch.step([(lane.world, points, stop) for lane, points, stop in moves])
            for (lane, _, _), state in zip(moves, states, strict=True):
                self._stepped(lane, state, following)
        else:
            for lane, setpoints, stop in moves:
                if stop:  # an agent reached its objective rule: the game's step is its last
                    lane.world.stop_requested = True
                self._stepped(lane, lane.world.update(setpoints), following)

    def _stepped(self, lane: Lane, state: m.EnvState, following: _Round) -> None:
        """A game stepped to ``state``: add its next observations (its episode's end, maybe
        the next episode's start) to ``following``."""
        world = lane.world
        self.steps += 1
        stepped = Stepped(
            zip(world.full_sensor_uids, state.values, strict=True),
            state.rewards,
            [state.done],
            [state.terminated],
            [state.truncated],
        )
        if not lane.game.stepped(stepped):
            following.add(lane, self.index, False)
            return
        following.add(lane, self.index, True)
        lane.done += 1
        following.ends.append(m.encode(_ended(lane)))
        if not lane.stops(self.episodes):  # (reset once the agents answered the end)
            following.restarts.append(lane)


def _send(process: Host, links: list[Channel], current: _Round, last: bool) -> None:
    """Send each agent with observations in the round its own (with ``last``: every agent
    the last message)."""
    for link, (lanes, episodes, steps) in zip(links, current.seen, strict=True):
        if not (steps or last):
            continue
        data = m.encode(m.AgentSteps(lanes=lanes, episodes=episodes, steps=steps, last=last))
        try:
            link.send(data)
        except PeerGone:  # its parent reports why; we wait for it until told to stop
            process.selector.discard(link)


def _answers(
    process: Host,
    hot: HotLoop,
    agents: Sequence[m.EpisodeAgent],
    links: list[Channel],
    current: _Round,
    last: bool = False,
) -> list[m.LaneActions | None]:
    """Each agent's answer to the round (the oldest it has not answered yet); None for an
    agent that was not asked (every agent is asked the ``last`` message)."""
    answers: list[m.LaneActions | None] = []
    waiting = process.muscles
    for agent, link, (lanes, _, _) in zip(agents, links, current.seen, strict=True):
        if not (lanes or last):
            answers.append(None)
            continue
        waiting.name = agent.process
        waiting.begin()
        try:
            answer = m.decode(link.recv())
        except PeerGone:
            hot.idle()  # its parent reports why
        waiting.end()
        if not isinstance(answer, m.LaneActions) or len(answer.setpoints) != len(lanes):
            raise TypeError(f"{process.name}: {type(answer).__name__} from {agent.process}")
        answers.append(answer)
    return answers


def _ended(lane: Lane) -> m.LaneEpisodeDone:
    """What the controller is told of the game's episode that ended."""
    result = lane.game.result()
    return m.LaneEpisodeDone(
        worker=lane.world.worker,
        episode=lane.world.episode,
        steps=result.steps,
        started_at=lane.started,
        ended_at=time.time(),
        terminated=result.terminated,
        truncated=result.truncated,
        rewards=result.rewards,
    )
