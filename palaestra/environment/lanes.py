"""Several games in one environment process (``phase_config.envs_per_worker``), stepped in rounds.

With ``envs_per_worker: N`` the environment process of worker ``w`` hosts N instances of the
environment (its *games*), seeded each with its own seed. Game ``i`` is recorded as worker
``w * N + i`` (its *lane*): its ``world_states``, ``muscle_actions`` and ``episodes`` rows are
those a worker of its own would write. :func:`play_lanes` plays them in rounds, in two
groups (of 4 games at least) whose rounds overlap: a group's round sends every Muscle one
:class:`~palaestra.core.messages.AgentSteps` with an observation of each of the group's games
that goes on, takes one :class:`~palaestra.core.messages.LaneActions` back from each, and
steps each of those games once, while the Muscles act in the other group's games. A game
whose episode ends resets at once and plays on (as gymnasium's vector environments reset
theirs), until it played ``episodes`` episodes of its own (or the phase's conditions end its
phase, or an agent's Brain reached its phase rule): each game plays what a worker plays.
Every agent acts in every round (the Vanilla order of turns).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import zmq

from palaestra.core import messages as m
from palaestra.core.channel import Channel, PeerGone
from palaestra.core.hotloop import HotLoop
from palaestra.core.loading import load_class
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.termination import (
    EpisodeEndsWithEnvironment,
    PhaseEndsAfterEpisodes,
    TerminationCondition,
)
from palaestra.core.turns import (
    GOING_ON,
    UNSAID,
    Ends,
    RewardSums,
    Stepped,
    episode_ends,
    observation,
)
from palaestra.environment.batch import Batch, stepped_in_batches

if TYPE_CHECKING:
    from palaestra.environment.environment_process import EnvironmentProcess


GROUPS = 2
"""Groups of a worker's games whose rounds overlap (see :func:`play_lanes`)."""
GROUP_MIN = 4
"""Games per group at least: fewer games play in one group (one round at a time)."""


def same_world(first: EnvironmentProcess, game: EnvironmentProcess) -> None:
    """Fail unless ``game`` has the sensors and actuators of the worker's first game (their
    Muscle acts in all with the same spaces)."""
    if game.sensor_uids != first.sensor_uids or [str(a.uid) for a in game.actuators] != [
        str(a.uid) for a in first.actuators
    ]:
        raise PluginContractError(
            game.env,
            "start_environment",
            f"of game {game.worker} reported sensors {game.sensor_uids} and actuators "
            f"{[str(a.uid) for a in game.actuators]}, the first game of the worker "
            f"{first.sensor_uids} and {[str(a.uid) for a in first.actuators]}: with "
            "envs_per_worker every instance must offer the same sensors and actuators",
        )


def _overrides(condition: TerminationCondition, method: str) -> bool:
    return getattr(type(condition), method) is not getattr(TerminationCondition, method)


class Lane:
    """One game as the rounds see it: its episode so far and its termination conditions."""

    __slots__ = (
        "index",
        "game",
        "done",
        "step",
        "ends",
        "rewards",
        "sums",
        "started",
        "values",
        "episode_conditions",
        "ends_with_environment",
        "phase_conditions",
    )

    def __init__(self, index: int, game: EnvironmentProcess, specs: Sequence[Any]) -> None:
        self.index = index
        self.game = game
        conditions = [call(load_class(c.name), **c.params) for c in specs]
        self.episode_conditions = [c for c in conditions if _overrides(c, "episode_done")]
        self.episode_conditions = self.episode_conditions or [EpisodeEndsWithEnvironment()]
        self.ends_with_environment = all(  # (then the environment's done decides alone)
            type(c) is EpisodeEndsWithEnvironment for c in self.episode_conditions
        )
        self.phase_conditions = [c for c in conditions if _overrides(c, "phase_done")]
        self.phase_conditions = self.phase_conditions or [PhaseEndsAfterEpisodes()]
        self.done = 0  # episodes this game played
        self.begin()

    def begin(self) -> None:
        """The game's world was (re)started: a new episode from its baseline."""
        game = self.game
        self.step = 0
        self.ends: Ends = UNSAID
        self.rewards: dict[str, list[m.InfoDesc] | None] = {}
        self.sums = RewardSums()
        self.started = time.time()
        self.values = dict(zip(game.full_sensor_uids, game.values, strict=True))

    def phase_over(self, episodes: int) -> bool:
        return any(call(c.phase_done, self.done, episodes) for c in self.phase_conditions)


class _Round:
    """The observations of one round, per agent in the same order of games."""

    __slots__ = ("lanes", "episodes", "steps", "acting")

    def __init__(self, agents: int) -> None:
        self.lanes: list[int] = []
        self.episodes: list[int] = []
        self.steps: list[list[m.AgentStep]] = [[] for _ in range(agents)]
        self.acting: list[tuple[int, Lane]] = []  # (position in the round, game) that act

    def add(
        self,
        lane: Lane,
        agents: Sequence[m.EpisodeAgent],
        done: bool,
    ) -> None:
        """Add the game's observation for every agent (with ``done``: the episode's last)."""
        position = len(self.lanes)
        self.lanes.append(lane.index)
        self.episodes.append(lane.game.episode)
        for agent, steps in zip(agents, self.steps, strict=True):
            seen = observation(agent, lane.step, lane.values, lane.rewards, done, lane.ends)
            lane.sums.observed(agent.process, seen.rewards)
            steps.append(seen)
        if not done:
            self.acting.append((position, lane))


def play_lanes(
    process: EnvironmentProcess,
    hot: HotLoop,
    message: m.EnvLanes,
    router: zmq.Socket[bytes],
    controller: bytes,
) -> m.EnvLanesDone:
    """Play the worker's games until each is over; each episode's end goes to the
    ``controller`` (its id on ``router``) as it happens. Returns the answer to ``message``.

    The games are played in :data:`GROUPS` groups (of :data:`GROUP_MIN` games at least)
    whose rounds overlap: while the Muscles act in one group's games, the other group's games
    step; each game still steps once per answer to its own observation, so what each game
    does is the same. (On two cores this plays 64 games about 1.5 times as fast as one
    group.) The last message has no game and ``last`` set.
    """
    play = _Play(process, hot, message, lambda done: router.send_multipart([controller, done]))
    agents, links = play.agents, play.links
    groups = max(1, min(GROUPS, len(play.lanes) // GROUP_MIN))
    size = -(-len(play.lanes) // groups)  # (rounded up)
    pending: deque[_Round] = deque()
    for first in range(0, len(play.lanes), size):
        current = _Round(len(agents))
        for lane in play.lanes[first : first + size]:
            if not lane.phase_over(message.episodes):
                current.add(lane, agents, False)
        if current.lanes:
            _send(process, links, current, False)
            pending.append(current)
    while pending:
        current = pending.popleft()
        following = play.round(current, _answers(process, hot, agents, links, current))
        if following.lanes:
            _send(process, links, following, False)
            pending.append(following)
    last = _Round(len(agents))
    _send(process, links, last, True)
    _answers(process, hot, agents, links, last)
    return m.EnvLanesDone(steps=play.steps, end_phase=play.end_phase)


class _Play:
    """The games of an environment process and the agents that play them."""

    def __init__(
        self,
        process: EnvironmentProcess,
        hot: HotLoop,
        message: m.EnvLanes,
        tell: Callable[[bytes], object],
    ) -> None:
        self.process = process
        self.agents = message.agents
        self.episodes = message.episodes
        self.links = [process._link(hot, a.process) for a in self.agents]
        self.acts_here = [a.acts_here for a in self.agents]
        self.lanes = [Lane(i, game, message.conditions) for i, game in enumerate(process.games)]
        for lane in self.lanes:
            lane.done = message.first_episode
            lane.rewards = {a.process: None for a in self.agents}
        self.tell = tell
        self.steps = 0
        self.end_phase = False  # an agent's Brain reached its phase rule
        self.batch = Batch(process) if stepped_in_batches(process) else None

    def round(self, current: _Round, answers: list[m.LaneActions]) -> _Round:
        """Step every game that acted in ``current``; the observations of the next round."""
        self.end_phase = self.end_phase or any(a.end_phase for a in answers)
        following = _Round(len(self.agents))
        pairs = list(zip(answers, self.acts_here, strict=True))
        moves: list[tuple[Lane, dict[str, Any], bool]] = []
        for position, lane in current.acting:
            setpoints: dict[str, Any] = {}
            stop = False
            for answer, here in pairs:
                if here:
                    setpoints.update(answer.setpoints[position])
                stop = stop or answer.stop[position]
            moves.append((lane, setpoints, stop))
        if self.batch is not None and moves:
            states = self.batch.step(moves)
            for (lane, _, _), state in zip(moves, states, strict=True):
                self._stepped(lane, state, following)
        else:
            for lane, setpoints, stop in moves:
                self._step(lane, setpoints, stop, following)
        return following

    def _step(self, lane: Lane, setpoints: dict[str, Any], stop: bool, following: _Round) -> None:
        """Step one game; add its next observations (its episode's end, maybe the next
        episode's start) to ``following``."""
        game = lane.game
        if stop:  # an agent reached its objective rule: the game's step is its last
            game.stop_requested = True
        self._stepped(lane, game.update(setpoints), following)

    def _stepped(self, lane: Lane, state: m.EnvState, following: _Round) -> None:
        """A game stepped to ``state``: add its next observations (its episode's end, maybe
        the next episode's start) to ``following``."""
        game = lane.game
        agents = self.agents
        self.steps += 1
        lane.step += 1
        lane.values.update(zip(game.full_sensor_uids, state.values, strict=True))
        for agent in agents:
            lane.rewards[agent.process] = state.rewards
        if lane.ends_with_environment:
            over = state.done
        else:
            over = any(call(c.episode_done, [state.done]) for c in lane.episode_conditions)
        if not over:
            if lane.ends is UNSAID and (
                state.terminated is not None or state.truncated is not None
            ):
                lane.ends = GOING_ON
            following.add(lane, agents, False)
            return
        lane.ends = episode_ends(
            Stepped((), state.rewards, [state.done], [state.terminated], [state.truncated])
        )
        following.add(lane, agents, True)
        lane.done += 1
        self.tell(m.encode(_ended(lane)))
        if not (self.end_phase or lane.phase_over(self.episodes)):
            game.start_world(True, game.check_rewards)
            lane.begin()
            lane.rewards = {a.process: None for a in agents}
            following.add(lane, agents, False)


def _send(process: EnvironmentProcess, links: list[Channel], current: _Round, last: bool) -> None:
    """Send each agent its observations of the round."""
    for link, steps in zip(links, current.steps, strict=True):
        data = m.encode(
            m.AgentSteps(lanes=current.lanes, episodes=current.episodes, steps=steps, last=last)
        )
        try:
            link.send(data)
        except PeerGone:  # its parent reports why; we wait for it until told to stop
            process.selector.discard(link)


def _answers(
    process: EnvironmentProcess,
    hot: HotLoop,
    agents: Sequence[m.EpisodeAgent],
    links: list[Channel],
    current: _Round,
) -> list[m.LaneActions]:
    """Each agent's answer to the round (the oldest the agents have not answered yet)."""
    answers = []
    waiting = process.muscles
    for agent, link in zip(agents, links, strict=True):
        waiting.name = agent.process
        waiting.begin()
        try:
            answer = m.decode(link.recv())
        except PeerGone:
            hot.idle()  # its parent reports why
        waiting.end()
        if not isinstance(answer, m.LaneActions) or len(answer.setpoints) != len(current.lanes):
            raise TypeError(f"{process.name}: {type(answer).__name__} from {agent.process}")
        answers.append(answer)
    return answers


def _ended(lane: Lane) -> m.LaneEpisodeDone:
    """What the controller is told of the game's episode that ended."""
    game = lane.game
    return m.LaneEpisodeDone(
        worker=game.worker,
        episode=game.episode,
        steps=lane.step,
        started_at=lane.started,
        ended_at=time.time(),
        terminated=lane.ends[0],
        truncated=lane.ends[1],
        rewards=lane.sums.totals,
    )
