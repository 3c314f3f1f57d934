"""A game whose players take turns (a PettingZoo AEC game) in a run file: its agents.

Each step of such a game applies the action of the player whose turn it is, and an actuator no
agent sets keeps its default: a player no agent drives would play each of its turns with the
default action, and the set points of an agent that acts on another player's turns would be
dropped. So, checked when the run file is loaded (exit 2, before any process starts), from the
players the environment's probe told (:mod:`palaestra.experiment.probe`):

* every player has an agent that drives at least one of its actuators;
* under a simulation whose turn policy is :class:`~palaestra.core.turns.RoundRobin`
  (TakingTurns), where the phase's agents act one per step in the run file's order, each agent
  drives an actuator of every player whose turns it takes, and none of a player whose turns it
  never takes: one agent per player, in the game's order of turns (or one agent that drives
  every player).

Under another policy (Vanilla: every agent acts each step) the game takes the set point of the
player whose turn it is from all the agents' set points: only the first rule applies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from palaestra.core.description.specs import AgentSpec
from palaestra.experiment.runfile_schema import Node, as_list

__all__ = ["check_turns"]

Players = Sequence[tuple[str, Sequence[str]]]
"""The players of a game in its order of turns, each with its full actuator ids."""


def check_turns(
    agents_node: Node,
    phase: str,
    environment: str,
    players: Players,
    agents: Sequence[AgentSpec],
    one_per_step: str | None,
) -> None:
    """Fail (at the phase's ``agents``) where its agents do not take the turns of
    ``environment``'s ``players``; ``one_per_step``: the simulation's name if its agents act
    one per step in the run file's order (TakingTurns), else None."""
    order = ", ".join(f"'{player}'" for player, _ in players)
    game = (
        f"phase '{phase}': environment '{environment}' is a game whose players take turns "
        f"({order})"
    )
    _check_every_player_driven(agents_node, game, order, players, agents)
    if one_per_step is None:
        return
    count = f"{len(agents)} agent{'s' if len(agents) != 1 else ''}"
    hint = (
        f"List one agent per player, in the game's order of turns ({order}), each with the "
        "actuators of its own player only (or one agent with the actuators of every player)."
    )
    for index, taken in enumerate(_turns_taken(len(agents), len(players))):
        agent = agents[index]
        theirs = [players[p] for p in taken]
        mine = [uid for uid in agent.actuators if uid.startswith(f"{environment}.")]
        problem = _turn_problem(players, theirs, mine)
        if problem is not None:
            names = " and ".join(f"'{player}'" for player, _ in theirs)
            as_list(agents_node)[index].fail(
                f"{game}, and under {one_per_step} the phase's {count} act one per step in "
                f"the run file's order: agent '{agent.name}' (the phase's agent {index + 1}) "
                f"takes the turns of {names}, but {problem}.",
                hint,
            )


def _check_every_player_driven(
    agents_node: Node, game: str, order: str, players: Players, agents: Sequence[AgentSpec]
) -> None:
    """Fail where a player has no agent that drives one of its actuators."""
    driven = {uid for agent in agents for uid in agent.actuators}
    undriven = [(p, ids) for p, ids in players if not driven.intersection(ids)]
    if undriven:
        names = ", ".join(f"'{p}' ({', '.join(ids)})" for p, ids in undriven)
        agents_node.fail(
            f"{game}, and no agent drives {'player' if len(undriven) == 1 else 'players'} "
            f"{names}: {'its' if len(undriven) == 1 else 'their'} turns would be played with "
            "the default action.",
            "Give every player an agent with its actuators, listed in the game's order of "
            f"turns ({order}).",
        )


def _turn_problem(players: Players, theirs: Players, mine: list[str]) -> str | None:
    """What is wrong with an agent that drives the actuators ``mine`` of a game of
    ``players`` and takes the turns of ``theirs``; None if nothing."""
    for player, ids in theirs:
        if not set(mine).intersection(ids):
            return (
                f"drives none of the actuators of '{player}' ({', '.join(ids)}): '{player}' "
                "would play those turns with the default action"
            )
    own = {uid for _, ids in theirs for uid in ids}
    foreign = [uid for uid in mine if uid not in own]
    if not foreign:
        return None
    owner = {uid: player for player, ids in players for uid in ids}
    owners = ", ".join(dict.fromkeys(f"'{owner.get(uid, '?')}'" for uid in foreign))
    return (
        f"drives {', '.join(foreign)}, of {owners}, whose turns it never takes: those set "
        "points would be dropped"
    )


def _turns_taken(agents: int, players: int) -> list[list[int]]:
    """For each of ``agents`` acting one per step in turn, the indices of the players (taking
    their turns likewise) whose turns it takes."""
    taken: list[list[int]] = [[] for _ in range(agents)]
    for step in range(math.lcm(agents, players)):
        turns = taken[step % agents]
        if step % players not in turns:
            turns.append(step % players)
    return [sorted(turns) for turns in taken]
