"""The policy of ``benchmarks/vector_envs.py``: a fixed linear CartPole policy, batched.

``LinearPolicy`` pushes right when ``state @ WEIGHTS > 0`` (pole angle plus angular velocity),
the rule the gymnasium loops of the benchmark apply to their observations. It acts on all games
of a round in one numpy product, on the round's column of states
(:meth:`propose_actions_columns`; :meth:`propose_actions_batch` does the same on each game's
objects). Load it as
``vector_plugins:LinearPolicy`` with ``benchmarks/`` on ``PYTHONPATH``. ``PerGameCartPole``
is CartPole stepped game by game (without its ``update_batch``), for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from palaestra.agent.muscle import Muscle
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.environment.cartpole import CartPole
from palaestra.environment.environment import EnvironmentState

WEIGHTS = np.array([0.0, 0.0, 1.0, 1.0])


def act(states: Any) -> Any:
    """The policy on a batch of CartPole states: 1 (right) or 0 (left) for each."""
    return (np.asarray(states, dtype=np.float64) @ WEIGHTS > 0).astype(np.int64)


class LinearPolicy(Muscle):
    """:func:`act` as a Muscle; the data for the Brain is None."""

    def propose_actions(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[ActuatorInformation], Any]:
        actuator = actuators_available[0]
        push = int(act([sensors[0].value])[0])
        return [ActuatorInformation(push, actuator.space, actuator.uid)], None

    def propose_actions_columns(
        self, sensors: Mapping[str, Any], actuators: Sequence[ActuatorInformation], games: int
    ) -> tuple[Mapping[str, Any], Sequence[Any] | None]:
        return {actuators[0].uid: act(sensors["pole.state"])}, None

    def propose_actions_batch(
        self,
        sensors: list[list[SensorInformation]],
        actuators_available: list[list[ActuatorInformation]],
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any]]:
        pushes = act([game[0].value for game in sensors]).tolist()
        space, uid = actuators_available[0][0].space, actuators_available[0][0].uid
        return [[ActuatorInformation(p, space, uid)] for p in pushes], [None] * len(pushes)


class PerGameCartPole(CartPole):
    """CartPole stepped game by game (``vector_envs.py --per-game``): it overrides
    :meth:`update` only, so palaestra does not use the inherited ``update_batch``."""

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        return super().update(actuators)
