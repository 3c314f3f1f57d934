"""Two agents take turns at PettingZoo's tic-tac-toe: palaestra's TakingTurns on an AEC game.

Run it (from the repository root, with ``pip install 'palaestra[gym]'``)::

    palaestra experiment-start experiments/tictactoe_turns.yml

``PettingZooEnvironment`` binds PettingZoo's ``player_1`` to the agent ``crosses`` and
``player_2`` to ``noughts`` through the sensors and actuators the run file gives each
(``board.player_1.obs.action_mask``, ``board.player_1.action``...). TakingTurns lets one agent
act per step, in the run file's order, which is the game's. Both agents here play a legal
move: ``crosses`` takes the first free cell of its preference list, ``noughts`` a random one;
each agent's objective is its own reward (``board.<player>.reward``: +1 for a win, -1 for a
loss, 0 otherwise), which reaches it with the step that ends its game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palaestra.agent import (
    ActuatorInformation,
    Brain,
    Memory,
    Muscle,
    Objective,
    SensorInformation,
)


class LegalMoveMuscle(Muscle):
    """Plays a legal move: the first free cell of ``preference`` if given, else a random one.

    Args:
        preference: Cells (0-8, column by column as PettingZoo numbers them) in the order
            this player wants them.
    """

    def __init__(self, preference: list[int] | None = None) -> None:
        self.preference = preference or []

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        mask = next(s.value for s in sensors if str(s.uid).endswith(".action_mask"))
        free = np.flatnonzero(mask)
        (move,) = actuators_available
        if not len(free):  # the game is over: PettingZoo ignores this last move
            move(0)
            return [move], None
        wanted = [cell for cell in self.preference if cell in free]
        move(int(wanted[0]) if wanted else int(self.rng.choice(free)))
        return [move], None


class Spectator(Brain):
    """Learns nothing: the example is about the turns."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        return None


class OwnReward(Objective):
    """The reward of one PettingZoo player (``player``), found by its uid."""

    def __init__(self, player: str) -> None:
        self.suffix = f"{player}.reward"

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        newest = memory.tail(1).reward_information
        own = [r.value for row in newest for r in row if str(r.uid).endswith(self.suffix)]
        return float(sum(own))
