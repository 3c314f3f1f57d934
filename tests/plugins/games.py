"""Plug-ins for several games per worker (``envs_per_worker``): a deterministic linear CartPole
policy that acts on all games in one batch and records each batch's size (and one that acts
on a round's columns, and one whose columns break the contract), a CartPole whose
game ``fail_game`` fails at step 3, a CartPole stepped game by game (without its
``update_batch``), one whose batch reports a value outside its space, and Objectives that
take a round's memories at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from palaestra.agent import DummyBrain
from palaestra.agent.memory import Memory
from palaestra.agent.muscle import Muscle
from palaestra.agent.objective import Objective
from palaestra.core.information import (
    ActuatorInformation,
    RewardInformation,
    SensorInformation,
)
from palaestra.core.mode import Mode
from palaestra.core.turns import A, TurnPolicy
from palaestra.environment.cartpole import CartPole
from palaestra.environment.environment import BatchState, Environment, EnvironmentState
from palaestra.simulation.controller import SimulationController

WEIGHTS = (0.0, 0.0, 1.0, 1.0)


class LinearMuscle(Muscle):
    """Pushes right when ``state @ weights > 0``: no randomness, the same in every game."""

    def __init__(self, weights: Sequence[float] = WEIGHTS) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        push = int(float(np.dot(np.asarray(sensors[0].value, np.float64), self.weights)) > 0)
        actuator = actuators_available[0]
        return [ActuatorInformation(push, actuator.space, actuator.uid)], None

    def propose_actions_batch(
        self,
        sensors: list[list[SensorInformation]],
        actuators_available: list[list[ActuatorInformation]],
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any]]:
        states = np.asarray([game[0].value for game in sensors], dtype=np.float64)
        pushes = [int(float(np.dot(state, self.weights)) > 0) for state in states]
        self.context.record("games", len(sensors))
        return [
            [ActuatorInformation(push, game[0].space, game[0].uid)]
            for push, game in zip(pushes, actuators_available, strict=True)
        ], [None] * len(sensors)


class ColumnMuscle(LinearMuscle):
    """:class:`LinearMuscle` on a round's columns (``propose_actions_columns``): each game's
    push from its state as ``propose_actions`` makes it, a column (an array, or a list with
    ``as_list``)."""

    rounds: ClassVar[list[int]] = []  # the games of each call

    def __init__(self, weights: Sequence[float] = WEIGHTS, as_list: bool = False) -> None:
        super().__init__(weights)
        self.as_list = as_list

    def propose_actions_columns(
        self, sensors: Mapping[str, Any], actuators: Sequence[ActuatorInformation], games: int
    ) -> tuple[Mapping[str, Any], Sequence[Any] | None]:
        states = sensors["pole.state"]
        assert isinstance(states, np.ndarray) and states.shape == (games, 4)
        pushes = [int(float(np.dot(state, self.weights)) > 0) for state in states]
        self.context.record("games", games)
        ColumnMuscle.rounds.append(games)
        column = pushes if self.as_list else np.asarray(pushes, dtype=np.int64)
        return {actuators[0].uid: column}, None


class BadColumns(LinearMuscle):
    """Columns that break ``propose_actions_columns``'s contract, as ``how`` says."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def propose_actions_columns(
        self, sensors: Mapping[str, Any], actuators: Sequence[ActuatorInformation], games: int
    ) -> Any:
        uid = actuators[0].uid
        if self.how == "short":
            return {uid: np.zeros(games - 1, dtype=np.int64)}, None
        if self.how == "foreign":
            return {"pole.kick": [1] * games}, None
        if self.how == "outside":
            return {uid: np.full(games, 2, dtype=np.int64)}, None
        return [1] * games  # not a pair


class FailingCartPole(CartPole):
    """A CartPole whose game (lane) ``fail_game`` raises at its third step."""

    def __init__(self, fail_game: int = 2, **params: Any) -> None:
        super().__init__(**params)
        self.fail_game = fail_game

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        if self.steps == 2 and self.context is not None and self.context.worker == self.fail_game:
            raise RuntimeError(f"game {self.fail_game} broke")
        return super().update(actuators)


class FailingMuscle(LinearMuscle):
    """A LinearMuscle whose batched call fails on its fifth round."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.rounds = 0

    def propose_actions_batch(
        self,
        sensors: list[list[SensorInformation]],
        actuators_available: list[list[ActuatorInformation]],
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any]]:
        self.rounds += 1
        if self.rounds == 5:
            raise ValueError("the model broke")
        return super().propose_actions_batch(sensors, actuators_available)


class CountingMuscle(LinearMuscle):
    """A Muscle written for one game (no batched hook): each call adds a statistic and a
    record, as it would once per step with one game per worker."""

    propose_actions_batch = Muscle.propose_actions_batch  # the default: one call per game

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        self.add_statistics("state", list(np.asarray(sensors[0].value, np.float64)))
        self.context.record("calls", 1)
        return super().propose_actions(sensors, actuators_available)


class PerGameCartPole(CartPole):
    """CartPole stepped game by game: it overrides ``update`` only, so the inherited
    ``update_batch`` is not used."""

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        return super().update(actuators)


SIGNED_ZEROS = (0.0, -0.0, -0.0, 0.0)
"""The rewards of :class:`SignedZeroCartPole`'s steps, in turn: equal, their texts not."""


def signed_zero(step: int) -> float:
    return SIGNED_ZEROS[step % len(SIGNED_ZEROS)]


class SignedZeroCartPole(PerGameCartPole):
    """A CartPole stepped game by game whose reward is 0.0 or -0.0 (:data:`SIGNED_ZEROS`)."""

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        state = super().update(actuators)
        reward = RewardInformation(signed_zero(self.steps), self.reward_space, "reward")
        state.rewards = [reward]
        return state


class SignedZeroBatchCartPole(CartPole):
    """:class:`SignedZeroCartPole` stepped in one batch."""

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        state = super().update_batch(games, setpoints)
        steps = [game.steps for game in games]  # type: ignore[attr-defined]
        state.rewards[0].value = np.array([signed_zero(step) for step in steps])
        return state


class StrayCartPole(CartPole):
    """A CartPole whose batch reports the cart of game ``stray_game`` far outside its space at
    its third step."""

    def __init__(self, stray_game: int = 2, **params: Any) -> None:
        super().__init__(**params)
        self.stray_game = stray_game

    @classmethod
    def update_batch(cls, games: Sequence[Environment], setpoints: dict[str, Any]) -> BatchState:
        state = super().update_batch(games, setpoints)
        for k, game in enumerate(games):
            assert isinstance(game, StrayCartPole) and game.context is not None
            if game.steps == 3 and game.context.worker == game.stray_game:
                state.sensor_information[0].value[k, 0] = 99.0
        return state


class RoundBrain(DummyBrain):
    """DummyBrain that thinks about a round's experiences in one call: it records each
    call's size (statistic ``batch``), how many games they came from (``games``) and whether
    they came in lane order (``ordered``: 1 or 0), and thinks as DummyBrain does."""

    def thinking_batch(self, experiences: Sequence[tuple[str, Any]]) -> Sequence[Any]:
        lanes = [int(muscle_id.rsplit("-", 1)[1]) for muscle_id, _ in experiences]
        self.add_statistics("batch", len(experiences))
        self.add_statistics("games", len(set(lanes)))
        self.add_statistics("ordered", int(lanes == sorted(lanes)))
        return [self.thinking(muscle_id, data) for muscle_id, data in experiences]


class EveryThirdStepBoth(TurnPolicy):
    """Both agents act on every third step of an episode, one after the other on the steps
    between: with games whose episodes differ in length, an agent acts in some games of a
    round and not in others."""

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:
        return agents if step % 3 == 0 else [agents[step % len(agents)]]


class BothEveryThird(SimulationController):
    """A simulation controller with the custom order of turns :class:`EveryThirdStepBoth`."""

    policy = EveryThirdStepBoth


class ModalMuscle(LinearMuscle):
    """A LinearMuscle that pushes the other way in test mode (an evaluation rollout), and
    acts game by game (the default ``propose_actions_batch``)."""

    propose_actions_batch = Muscle.propose_actions_batch

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        chosen, data = super().propose_actions(sensors, actuators_available)
        if self.mode == Mode.TEST:
            actuator = chosen[0]
            return [ActuatorInformation(1 - actuator.value, actuator.space, actuator.uid)], data
        return chosen, data


class EvenStepsOnly(TurnPolicy):
    """Every agent acts on the even steps of an episode, none on the odd ones (the world steps
    with its actuators' defaults)."""

    def acting(self, step: int, agents: Sequence[A]) -> Sequence[A]:
        return agents if step % 2 == 0 else []


class StepObjective(Objective):
    """The reward of the newest row plus its position in the memory: differs from game to game
    and from step to step."""

    def internal_reward(self, memory: Memory, **kwargs: Any) -> float:
        return sum(memory.latest_rewards()) + len(memory)


class RoundObjective(StepObjective):
    """A StepObjective that takes a round's memories in one call (``internal_rewards``) and
    counts the memories of each call in ``calls``."""

    calls: ClassVar[list[int]] = []

    def internal_rewards(self, memories: Sequence[Memory]) -> list[float]:
        RoundObjective.calls.append(len(memories))
        rewards = np.array([sum(m.latest_rewards()) for m in memories])
        sizes = np.array([len(m) for m in memories])
        return [float(v) for v in rewards + sizes]


class ShortObjective(StepObjective):
    """Answers a round with one value too few."""

    def internal_rewards(self, memories: Sequence[Memory]) -> list[float]:
        return [1.0] * (len(memories) - 1)
