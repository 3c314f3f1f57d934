"""The one per-round path: a worker's games (one, or ``phase_config.envs_per_worker``) played in
rounds, whoever hosts their worlds.

Game ``i`` of worker ``w`` is recorded as worker ``w * N + i`` (its *lane*). :func:`play_rounds`
plays the games in two groups (of 4 games at least; one group when paced) whose rounds overlap:
a group's round sends each Muscle that acts in one of its games one
:class:`~palaestra.core.wire.messages.AgentSteps`, takes one
:class:`~palaestra.core.wire.messages.LaneActions` back from each, and steps each of those games
once, while the Muscles act in the other group's games. A game whose episode ended resets once
every agent answered the round that told it so and plays on (as gymnasium's vector environments
do) until it played ``episodes`` episodes of its own, or its phase ends. Each game follows the
phase's order of turns (:class:`~palaestra.core.turns.Game`).

Who steps the worlds is a :class:`Table`: the environment process that hosts them
(:mod:`palaestra.environment.lanes`) or the simulation controller
(:mod:`palaestra.simulation.remote_games`). The Muscles are reached through :class:`Players`.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from palaestra.core.description.config import AUTO, GROUPS_VAR
from palaestra.core.description.loading import load_class
from palaestra.core.pacing import Pacer
from palaestra.core.plugin import call
from palaestra.core.termination import (
    PhaseEndsAfterEpisodes,
    TerminationCondition,
    decides_phases,
    episode_conditions,
)
from palaestra.core.turns import Game, Stepped, TurnPolicy
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import send_then

GROUPS = 2
"""Groups of a worker's games whose rounds overlap where the runtime config's ``round_groups``
is ``auto`` and the worker has :data:`GROUPS_GAMES` games or more, or its environment's
process may use :data:`GROUPS_CPUS` CPUs or more (see :func:`groups_of`)."""
GROUPS_CPUS = 4
"""CPUs from which ``round_groups: auto`` plays a worker's games in :data:`GROUPS` groups."""
GROUPS_GAMES = 192
"""Games of a worker from which ``round_groups: auto`` plays them in :data:`GROUPS` groups
whatever the CPUs: below, on 2 CPUs, the overlap costs more CPU than it saves time (figures in
``docs/performance.md``)."""
GROUP_MIN = 4
"""Games per group at least: fewer games play in one group (one round at a time)."""

Move = tuple[int, list[tuple[int, dict[str, Any], bool]]]
"""A game's step: its index and, for each agent that acts on it (in the order of the agents),
the agent's index, its set points (by full actuator uid) and whether it asked the step to be
the game's last (its objective rule holds)."""


class Table(Protocol):
    """The worlds of a worker's games, as the rounds step them."""

    def count(self) -> int:
        """The number of games."""

    def start(self, game: int) -> tuple[int, int, dict[str, Any]]:
        """Game ``game``'s lane (the worker its rows are under), episode and sensor values
        by full uid, as it stands now (started)."""

    def restart(self, games: list[int]) -> None:
        """Start the next episode of each of ``games`` (their :meth:`start` tells it)."""

    def step(self, moves: list[Move], late_by: float | None) -> list[Stepped]:
        """Step each move's game (``late_by``: how late the round's step began, paced; None:
        lockstep); what each step gave."""

    def sent(self) -> None:
        """The observations of the games just stepped are out: what could wait for that (the
        steps' rows) is done now, while the agents act, and before any game steps or restarts
        again (the rounds call it after each round's send, and after a failure)."""


class Players(Protocol):
    """The Muscles of the agents that play the games, by their index in the agents."""

    name: str  # who plays the rounds (in errors)

    def send(self, agent: int, data: bytes) -> None:
        """Send the agent's Muscle ``data`` (a Muscle that is gone: its parent reports)."""

    def receive(self, agent: int) -> bytes:
        """The Muscle's next answer (waited for, the wait named)."""

    def ready(self, agent: int) -> bool:
        """Whether its answer is in."""


@dataclass(slots=True, eq=False)
class Kept:
    """What a worker's rounds keep over the phase's plays (evaluations split a phase into
    several): the pacer of paced rounds, each game's episodes so far and its termination
    conditions (made once for the phase)."""

    pacer: Pacer | None = None
    played: list[int] | None = None
    conditions: list[list[TerminationCondition]] | None = None


class Lane:
    """One game of the worker as the rounds see it: its episode (a
    :class:`~palaestra.core.turns.Game`), the episodes it played and its phase's conditions."""

    __slots__ = (
        "index",
        "worker",
        "episode",
        "game",
        "done",
        "until",
        "started",
        "phase_conditions",
    )

    def __init__(
        self,
        index: int,
        table: Table,
        policy: TurnPolicy,
        agents: Sequence[m.EpisodeAgent],
        conditions: list[TerminationCondition],
    ) -> None:
        self.index = index
        self.worker, self.episode, values = table.start(index)
        self.phase_conditions = [c for c in conditions if decides_phases(c)]
        self.phase_conditions = self.phase_conditions or [PhaseEndsAfterEpisodes()]
        self.game = Game(policy, agents, episode_conditions(conditions), values)
        self.done = 0  # episodes this game played
        self.until = 0  # it stops at this many (0: its phase's conditions alone stop it)
        self.started = time.time()

    def begin(self, table: Table) -> None:
        """The game's world was restarted: a new episode from its baseline."""
        _, self.episode, values = table.start(self.index)
        self.game.begin(values)
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
        self.ends: list[m.LaneEpisodeDone] = []  # told of them, once answered

    def has_work(self) -> bool:
        """Whether the round has an observation, or a game to step (also a step in which no
        agent acts)."""
        return bool(self.acting) or any(lanes for lanes, _, _ in self.seen)

    def add(self, lane: Lane, agents: dict[str, int], done: bool) -> None:
        """Add the game's observations: of the agents that act on its step or (``done``)
        every agent's last of the episode."""
        game = lane.game
        episode = lane.episode
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


def play_rounds(
    table: Table,
    players: Players,
    plan: m.EnvLanes,
    kept: Kept,
    sleep: Callable[[float], None],
    tell: Callable[[m.LaneEpisodeDone], object],
) -> m.EnvLanesDone:
    """Play the worker's games of ``table`` as ``plan`` says until each is over; each
    episode's end is told (``tell``) once every agent answered the round that told them of it
    (their last rows of the episode are pushed by then: a run killed between the two stores no
    episode without its agents' rows). Returns how the games stopped.

    The games are played in groups (:func:`groups_of`: the runtime config's ``round_groups``;
    of :data:`GROUP_MIN` games at least) whose rounds overlap; each game still steps once per
    answer to its own observation. An agent with no observation in a round is not asked. The
    last message goes to every agent, has no game and ``last`` set. ``sleep`` is what a paced
    round waits with.
    """
    play = _Play(table, players, plan, kept, tell)
    if plan.step_rate > 0:  # one group: each round is a step of each of its games
        play.pacer = kept.pacer = kept.pacer or Pacer(plan.step_rate, sleep)
        play.pacer.begin()
    groups = 1 if play.pacer else groups_of(len(play.lanes))
    size = -(-len(play.lanes) // groups)  # (rounded up)
    pending: deque[_Round] = deque()
    for first in range(0, len(play.lanes), size):
        current = _Round(play.index)
        for lane in play.lanes[first : first + size]:
            if not lane.stops(plan.episodes):
                current.add(lane, play.index, False)
        if current.has_work():
            play.send(current, False)
            pending.append(current)

    def rounds() -> None:
        while pending:
            following = play.round(pending.popleft())
            if following.has_work():
                play.send(following, False)
                pending.append(following)
            table.sent()

    send_then(rounds, table.sent)  # (a stop or a failure keeps the rows of the steps taken)
    last = _Round(play.index)
    play.send(last, True)
    play.answers(last, True)
    return play.over()


class _Play:
    """One play of a worker's games: its lanes, the agents that play them, its rounds."""

    def __init__(
        self,
        table: Table,
        players: Players,
        plan: m.EnvLanes,
        kept: Kept,
        tell: Callable[[m.LaneEpisodeDone], object],
    ) -> None:
        self.table = table
        self.players = players
        self.kept = kept
        self.pacer: Pacer | None = None  # (paced rounds)
        self.agents = plan.agents
        self.index = {a.process: i for i, a in enumerate(self.agents)}
        self.episodes = plan.episodes
        policy: TurnPolicy = call(load_class(plan.policy))
        count = table.count()
        if kept.conditions is None:  # each game its own, kept over the phase's plays
            kept.conditions = [
                [call(load_class(c.name), **c.params) for c in plan.conditions]
                for _ in range(count)
            ]
        self.lanes = [
            Lane(i, table, policy, self.agents, conditions)
            for i, conditions in enumerate(kept.conditions)
        ]
        self.evaluation = plan.evaluation
        if plan.evaluation:  # one rollout each
            for lane in self.lanes:
                lane.until, lane.phase_conditions = 1, []
        else:  # each game's episodes so far: counted on over the phase's plays
            played = kept.played or [plan.first_episode] * count
            for lane, done in zip(self.lanes, played, strict=True):
                lane.done, lane.until = done, plan.until
        self.tell = tell
        self.steps = 0
        self.end_phase = False  # an agent's Brain reached its phase rule

    def over(self) -> m.EnvLanesDone:
        """How the games stopped (each game's episodes kept for the next play)."""
        lanes, episodes = self.lanes, self.episodes
        if not self.evaluation:
            self.kept.played = [lane.done for lane in lanes]
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
            players = self.players
            asked = [k for k, seen in enumerate(current.seen) if seen[0]]
            held = not all(players.ready(k) for k in asked)  # late if their answers are
            answers = self.answers(current)
            late_by = pacer.delayed() if held else pacer.late_by
        else:
            answers = self.answers(current)
        self.end_phase = self.end_phase or any(a.end_phase for a in answers if a is not None)
        for told in current.ends:  # (the agents' last rows of the episode are out before)
            self.tell(told)
        following = _Round(self.index)
        if not self.end_phase and current.restarts:  # every agent saw their episodes' end
            self._restart(current.restarts, following)
        self._step(current, answers, late_by, following)
        return following

    def _restart(self, lanes: list[Lane], following: _Round) -> None:
        """Begin the next episode of each of ``lanes``: its first observations go to
        ``following``."""
        table = self.table
        table.restart([lane.index for lane in lanes])
        for lane in lanes:
            lane.begin(table)
            following.add(lane, self.index, False)

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
        if not current.acting:
            return
        moves: list[Move] = []
        for lane, acting in current.acting:
            chosen = []
            for agent, position in acting:
                answer = answers[agent]
                assert answer is not None
                chosen.append((agent, answer.setpoints[position], answer.stop[position]))
            moves.append((lane.index, chosen))
        states = self.table.step(moves, late_by)
        self.steps += len(states)
        index = self.index
        for (lane, _), stepped in zip(current.acting, states, strict=True):
            if lane.game.stepped(stepped):
                self._episode_ended(lane, following)
            else:  # (its next observations)
                following.add(lane, index, False)

    def _episode_ended(self, lane: Lane, following: _Round) -> None:
        """A game's episode ended: add its end (and maybe the next episode's start) to
        ``following``."""
        following.add(lane, self.index, True)
        lane.done += 1
        following.ends.append(_ended(lane))
        if not lane.stops(self.episodes):  # (reset once the agents answered the end)
            following.restarts.append(lane)

    def send(self, current: _Round, last: bool) -> None:
        """Send each agent with observations in the round its own (with ``last``: every agent
        the last message)."""
        players = self.players
        for k, (lanes, episodes, steps) in enumerate(current.seen):
            if not (steps or last):
                continue
            data = m.encode(m.AgentSteps(lanes=lanes, episodes=episodes, steps=steps, last=last))
            players.send(k, data)

    def answers(self, current: _Round, last: bool = False) -> list[m.LaneActions | None]:
        """Each agent's answer to the round (the oldest it has not answered yet); None for an
        agent that was not asked (every agent is asked the ``last`` message)."""
        answers: list[m.LaneActions | None] = []
        players = self.players
        for k, (agent, (lanes, _, _)) in enumerate(zip(self.agents, current.seen, strict=True)):
            if not (lanes or last):
                answers.append(None)
                continue
            answer = m.decode(players.receive(k))
            if not isinstance(answer, m.LaneActions) or len(answer.setpoints) != len(lanes):
                raise TypeError(f"{players.name}: {type(answer).__name__} from {agent.process}")
            answers.append(answer)
        return answers


def groups_of(games: int) -> int:
    """The groups ``games`` play in (see :func:`play_rounds`): as the runtime config's
    ``round_groups`` says (passed to the run's processes in :data:`GROUPS_VAR`), with
    :data:`GROUP_MIN` games in a group at least; ``auto``: :data:`GROUPS` from
    :data:`GROUPS_GAMES` games on, or where this process may use :data:`GROUPS_CPUS` CPUs or
    more (``cpu_affinity: worker`` gives it one), else one."""
    setting = os.environ.get(GROUPS_VAR, AUTO)
    if setting.isdigit():
        wanted = int(setting)
    else:
        wanted = GROUPS if games >= GROUPS_GAMES or _cpus() >= GROUPS_CPUS else 1
    return max(1, min(wanted, games // GROUP_MIN))


def _cpus() -> int:
    """The CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # (macOS: no affinity)


def _ended(lane: Lane) -> m.LaneEpisodeDone:
    """What is told of the game's episode that ended."""
    result = lane.game.result()
    return m.LaneEpisodeDone(
        worker=lane.worker,
        episode=lane.episode,
        steps=result.steps,
        started_at=lane.started,
        ended_at=time.time(),
        terminated=result.terminated,
        truncated=result.truncated,
        rewards=result.rewards,
    )
