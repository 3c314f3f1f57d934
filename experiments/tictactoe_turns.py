"""Two agents take turns at PettingZoo's tic-tac-toe: palaestra's TakingTurns on an AEC game,
and one of them learns to beat the other.

Run it (from the repository root, with ``pip install 'palaestra[gym]'``)::

    palaestra experiment-start experiments/tictactoe_turns.yml

``PettingZooEnvironment`` binds PettingZoo's ``player_1`` to the agent ``crosses`` and
``player_2`` to ``noughts`` through the sensors and actuators the run file gives each
(``board.player_1.obs.action_mask``, ``board.player_1.action``...). TakingTurns lets one agent
act per step, in the run file's order, which is the game's. Each agent's objective is its own
reward (``board.<player>.reward``: +1 for a win, -1 for a loss, 0 otherwise), which reaches it
with the step that ends its game. ``noughts`` plays a random legal move (``LegalMoveMuscle``);
``crosses`` learns a table of move values by Monte Carlo control (``MonteCarloBrain`` and
``TableMuscle``): every move of a game is pulled towards the game's outcome, the Muscle plays
epsilon-greedy among the free cells while training and greedily in the test phase, which loads
the table the train phase stored. Against the random player it goes from winning about 58% of
its games (random against random) to about 90% (``benchmarks/learning_tictactoe.py``).
"""

from __future__ import annotations

import io
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
    """Learns nothing: the Brain of the random player."""

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


def board_key(board: Any) -> bytes:
    """A board (PettingZoo's 3 x 3 x 2 planes of 0 and 1) as a key of the table."""
    return np.asarray(board, dtype=np.uint8).tobytes()


def table_bytes(table: dict[bytes, np.ndarray]) -> bytes:
    """The table as a NumPy ``.npz``: the boards (18 bytes each) and their 9 move values."""
    keys = np.frombuffer(b"".join(table), dtype=np.uint8).reshape(len(table), 18)
    values = np.stack(list(table.values())) if table else np.zeros((0, 9))
    out = io.BytesIO()
    np.savez(out, keys=keys, values=values)
    return out.getvalue()


def table_of(dump: Any) -> dict[bytes, np.ndarray]:
    """The table :func:`table_bytes` wrote, from a dump (a stream)."""
    data = np.load(dump)
    return {bytes(k): v.copy() for k, v in zip(data["keys"], data["values"], strict=True)}


class MonteCarloBrain(Brain):
    """Learns the value of each move in each board from the outcomes of whole games.

    At the end of a game every move the Muscle made in it is moved a step ``alpha`` towards
    the game's outcome (+1, 0 or -1, the sum of the agent's objective over the game). The
    Muscle gets the values of the boards of that game (only those: the table grows) and the
    current epsilon.

    Args:
        alpha: The step size.
        epsilon_start: The exploration rate at the first game ...
        epsilon_end: ... falling linearly to this ...
        explore_episodes: ... over this many games.
    """

    def __init__(
        self,
        alpha: float = 0.1,
        epsilon_start: float = 1.0,
        epsilon_end: float = 0.05,
        explore_episodes: int = 2000,
    ) -> None:
        self.alpha = alpha
        self.epsilon_start, self.epsilon_end = epsilon_start, epsilon_end
        self.explore_episodes = explore_episodes
        self.table: dict[bytes, np.ndarray] = {}
        self.games = 0
        self.moves: dict[str, list[tuple[bytes, int]]] = {}  # this game's, per Muscle
        self.outcome: dict[str, float] = {}

    @property
    def epsilon(self) -> float:
        progress = min(1.0, self.games / max(1, self.explore_episodes))
        return self.epsilon_start + (self.epsilon_end - self.epsilon_start) * progress

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.mode == "test" or data_from_muscle is None:
            return None
        rows = self.memory.muscle_memory(muscle_id)
        if data_from_muscle == "moved":  # not the step that only ends the game
            board = rows.sensor_readings[-1][0].value
            move = int(rows.actuator_setpoints[-1][0].value)
            self.moves.setdefault(muscle_id, []).append((board_key(board), move))
        objective = rows.objective[-1]
        self.outcome[muscle_id] = self.outcome.get(muscle_id, 0.0) + float(objective or 0.0)
        if not bool(rows.dones[-1]):
            return None
        outcome = self.outcome.pop(muscle_id, 0.0)
        changed = {}
        for key, move in self.moves.pop(muscle_id, []):
            values = self.table.setdefault(key, np.zeros(9))
            values[move] += self.alpha * (outcome - values[move])
            changed[key] = values.copy()
        self.games += 1
        return changed, self.epsilon

    def store(self) -> None:
        self.store_brain_dump(table_bytes(self.table))

    def load(self) -> None:
        dump = self.load_brain_dump()
        if dump is not None:
            self.table = table_of(dump)


class TableMuscle(Muscle):
    """Plays the free cell of the highest value (ties at random), epsilon-greedy in training."""

    def __init__(self) -> None:
        self.table: dict[bytes, np.ndarray] = {}
        self.epsilon = 1.0

    def prepare_model(self) -> None:
        # a test phase: the table the train phase stored, played greedily
        dump = self.load()
        if dump is not None:
            self.table = table_of(dump)
            self.epsilon = 0.0

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        board, mask = sensors[0].value, sensors[1].value
        free = np.flatnonzero(mask)
        (move,) = actuators_available
        if not len(free):  # the game is over: PettingZoo ignores this last move
            move(0)
            return [move], "ended"
        values = self.table.get(board_key(board))
        explore = self.mode == "train" and self.rng.random() < self.epsilon
        if values is None or explore:
            move(int(self.rng.choice(free)))
        else:
            best = free[values[free] == values[free].max()]
            move(int(best[0] if len(best) == 1 else self.rng.choice(best)))
        return [move], "moved"

    def update(self, update: Any) -> None:
        if update is not None:
            changed, self.epsilon = update
            self.table.update(changed)
