"""The worker's games as the simulation controller plays them: game ``i`` is the ``i``-th world
of each of the phase's environments (each environment process hosts the worker's
``envs_per_worker`` worlds of its environment). The controller plays their rounds
(:func:`palaestra.core.rounds.play_rounds`) with the Muscles over its sockets and steps each
round's games in every environment (:class:`~palaestra.core.wire.messages.EnvRound`): with several
environments in the phase, or ``driver: controller``."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from palaestra.core.rounds import Move
from palaestra.core.turns import Stepped
from palaestra.core.wire import messages as m
from palaestra.simulation.peers import AgentPeer, Peer


class RemoteGames:
    """The games' worlds in the environment processes, as a
    :class:`~palaestra.core.rounds.Table` (started: ``baselines``, the environments' answers
    to their start, in the order of ``environments``)."""

    def __init__(
        self,
        environments: Sequence[Peer],
        baselines: Sequence[m.EnvBaseline],
        agents: Sequence[AgentPeer],
        first_lane: int,
    ) -> None:
        self.environments = environments
        self.index = {env.name: k for k, env in enumerate(environments)}
        # by agent: the environments it acts on (by their index)
        self.acts_on = [
            [k for k, env in enumerate(environments) if env.name in agent.environments]
            for agent in agents
        ]
        self.uids = [[s.uid for s in b.sensors] for b in baselines]
        self.values = [list(b.games) for b in baselines]
        self.episodes = list(baselines[0].episodes)
        self.first_lane = first_lane

    def count(self) -> int:
        return len(self.episodes)

    def start(self, game: int) -> tuple[int, int, dict[str, Any]]:
        values: dict[str, Any] = {}
        for uids, games in zip(self.uids, self.values, strict=True):
            values.update(zip(uids, games[game], strict=True))
        return self.first_lane + game, self.episodes[game], values

    def restart(self, games: list[int]) -> None:
        restart = m.encode(m.EnvRestart(games=games))
        for env in self.environments:
            env.send(restart)
        for k, env in enumerate(self.environments):
            answer = m.decode(env.recv())
            if not isinstance(answer, m.EnvBaseline):
                raise TypeError(f"{type(answer).__name__} from {env.name}")
            for game, episode, values in zip(games, answer.episodes, answer.games, strict=True):
                self.values[k][game] = values
                self.episodes[game] = episode

    def sent(self) -> None:
        """(The environments record their steps' rows themselves.)"""

    def step(self, moves: list[Move], late_by: float | None) -> list[Stepped]:
        games = [index for index, _ in moves]
        setpoints, stop = self._split(moves)
        for k, env in enumerate(self.environments):
            env.send(
                m.encode(
                    m.EnvRound(games=games, setpoints=setpoints[k], stop=stop[k], late_by=late_by)
                )
            )
        answers: list[list[m.EnvState]] = []
        for env in self.environments:
            answer = m.decode(env.recv())
            if not isinstance(answer, m.EnvRoundDone) or len(answer.states) != len(games):
                raise TypeError(f"{type(answer).__name__} from {env.name}")
            answers.append(answer.states)
        uids = self.uids
        return [
            Stepped(
                chain.from_iterable(
                    zip(u, s.values, strict=True) for u, s in zip(uids, states, strict=True)
                ),
                [r for s in states for r in s.rewards],
                [s.done for s in states],
                [s.terminated for s in states],
                [s.truncated for s in states],
            )
            for states in zip(*answers, strict=True)
        ]

    def _split(self, moves: list[Move]) -> tuple[list[list[dict[str, Any]]], list[list[bool]]]:
        """By environment: each move's set points (by the environment's own ids) and whether
        an agent that acts on it asked the step to be the game's last."""
        index = self.index
        acts_on = self.acts_on
        count = len(self.environments)
        setpoints: list[list[dict[str, Any]]] = [[] for _ in range(count)]
        stop: list[list[bool]] = [[] for _ in range(count)]
        for _, chosen in moves:
            split: list[dict[str, Any]] = [{} for _ in range(count)]
            stops = [False] * count
            for agent, points, stops_it in chosen:
                for uid, value in points.items():
                    env_uid, _, local = uid.partition(".")
                    k = index.get(env_uid)
                    if k is not None:
                        split[k][local] = value
                if stops_it:  # (the environments the agent acts on are told)
                    for k in acts_on[agent]:
                        stops[k] = True
            for k in range(count):
                setpoints[k].append(split[k])
                stop[k].append(stops[k])
        return setpoints, stop


class Seats:
    """The Muscles as the controller's rounds reach them: over its links
    (:class:`~palaestra.core.rounds.Players`)."""

    def __init__(self, name: str, agents: Sequence[AgentPeer]) -> None:
        self.name = name
        self.agents = agents

    def send(self, agent: int, data: bytes) -> None:
        self.agents[agent].send(data)

    def receive(self, agent: int) -> bytes:
        return self.agents[agent].recv()

    def ready(self, agent: int) -> bool:
        return self.agents[agent].linked().ready()
