"""What a Muscle's agent reads and sets in its episodes: the uids and spaces of its sensors and
actuators (as the episode's environments describe them), and the check of every set point its
Muscle chooses before anything is sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from palaestra.agent.lazy_rows import SensorRow, SetpointRow, ValueParts
from palaestra.agent.muscle import PROPOSAL, Muscle
from palaestra.core.description.seeds import derive_seed
from palaestra.core.information import ActuatorInformation, SensorInformation, json_value
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.space_checks import Check, column_inside, value_check
from palaestra.core.wire import messages as m
from palaestra.core.wire.codec import SpaceCache
from palaestra.core.wire.records import UnencodableValue, unencodable_key

COLUMN_CHECK = 8
"""Games from which an array of set points is checked against its space in one comparison
(for fewer, each value's own check costs less than numpy's calls)."""


class Schema:
    """The agent's sensors and actuators (``agent``: its name, in errors; ``seed``: the
    worker's, which seeds the actuator spaces)."""

    __slots__ = (
        "agent",
        "seed",
        "actuator_seeds",
        "spaces",
        "sensor_uids",
        "sensor_spaces",
        "actuator_uids",
        "actuator_spaces",
        "checks",
        "sensor_row",
        "setpoint_row",
        "parts",
    )

    def __init__(self, agent: str, seed: int) -> None:
        self.agent = agent
        self.seed = seed
        self.actuator_seeds: dict[str, int] = {}  # each actuator's, from ``seed``
        self.spaces = SpaceCache()  # decoded once, by uid and description
        self.set([], [])  # (none until the first episode's)

    def set(self, sensors: list[m.InfoDesc], actuators: list[m.InfoDesc]) -> None:
        """Take the episode's descriptions of the agent's sensors and actuators, in their
        order (and seed the actuator spaces)."""
        spaces = self.spaces
        self.sensor_uids: list[str] = [d.uid for d in sensors]
        self.sensor_spaces: list[Any] = [spaces.space(d.uid, d.space) for d in sensors]
        self.actuator_uids: list[str] = [d.uid for d in actuators]
        self.actuator_spaces: list[Any] = [spaces.space(d.uid, d.space) for d in actuators]
        self.checks: dict[str, Check] = {
            uid: value_check(space)
            for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True)
        }
        # a memory row's sensor and set point objects from its values, built when read
        self.sensor_row = SensorRow(
            [
                SensorInformation(None, space, uid)
                for uid, space in zip(self.sensor_uids, self.sensor_spaces, strict=True)
            ]
        )
        self.setpoint_row = SetpointRow(
            dict(zip(self.actuator_uids, self.actuator_spaces, strict=True))
        )
        self.parts = ValueParts(self.sensor_row, len(self.sensor_uids), self.setpoint_row)
        self.seed_actuators()

    def actuators(self) -> list[ActuatorInformation]:
        """The agent's actuators without a value (new objects: a Muscle may set them)."""
        return [
            ActuatorInformation(None, space, uid)
            for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True)
        ]

    def seed_actuators(self) -> None:
        """Seed each actuator space (for ``sample()``) from the worker's seed: at every
        episode's start, so a seeded random Muscle repeats its episodes' draws."""
        seeds = self.actuator_seeds
        for uid, space in zip(self.actuator_uids, self.actuator_spaces, strict=True):
            if space is not None:
                seed = seeds.get(uid)
                if seed is None:  # (derived once: the same each episode)
                    seed = seeds[uid] = derive_seed(self.seed, "actuator", uid)
                space.seed(seed)

    def setpoint_values(
        self, muscle: Muscle, setpoints: Any, step: int, episode: int
    ) -> dict[str, Any]:
        """The set points ``muscle``'s ``propose_actions`` chose, as values by actuator uid,
        checked before anything is applied, in one pass: an actuator this agent was not given,
        or a value outside its actuator's declared space, fails the step naming the Muscle
        (not the environment that would have tripped over it)."""
        checks = self.checks
        values: dict[str, Any] = {}
        foreign = False
        for actuator in setpoints:
            try:
                uid, value = str(actuator.uid), actuator.value
            except AttributeError as exc:  # not ActuatorInformation
                found = ", ".join(sorted({type(a).__name__ for a in setpoints}))
                raise PluginContractError(
                    muscle,
                    "propose_actions",
                    f"returned set points of type {found} at step {step} of episode {episode}: "
                    f"{PROPOSAL}",
                ) from exc
            check = checks.get(uid)
            if check is None:
                foreign = True
            elif not check(value):
                raise self._outside(muscle, uid, value, f"at step {step} of episode {episode}")
            values[uid] = json_value(actuator)
        if foreign:
            raise self._foreign(muscle, values)
        return values

    def setpoint_column(
        self, muscle: Muscle, uid: Any, column: Any, count: int, where: Callable[[int], str]
    ) -> list[Any]:
        """The column of set points ``propose_actions_columns`` chose for actuator ``uid`` in
        ``count`` games, as each game's value, checked as :meth:`setpoint_values` checks one:
        an array of numbers of the space's shape at once (from :data:`COLUMN_CHECK` games on),
        anything else value by value (``where``: the game and step of row ``j``, in errors)."""
        method = "propose_actions_columns"
        check = self.checks.get(uid)
        if check is None:
            raise self._foreign(muscle, {uid: None}, method)
        space = self.actuator_spaces[self.actuator_uids.index(uid)]
        values: list[Any] = []
        if type(column) is np.ndarray and space is not None and column.shape[:1] == (count,):
            if count >= COLUMN_CHECK and column.shape[1:] == space.shape:
                if column_inside(space, column):
                    rows: list[Any] = np.asarray(column, dtype=space.dtype).tolist()
                    return rows  # (a value per game)
            values = column.tolist() if column.ndim == 1 else list(column)  # (checked below)
        elif not isinstance(column, str | bytes):
            try:
                values = list(column)
            except TypeError:
                pass
        if len(values) != count:
            raise PluginContractError(
                muscle,
                method,
                f"returned a column of {type(column).__name__} for actuator {uid!r}: expected "
                f"{count} values, one per game",
            )
        for j, value in enumerate(values):
            if not check(value):
                raise self._outside(muscle, uid, value, where(j), method)
        return [json_value(ActuatorInformation(v, space, uid)) for v in values]

    def _outside(
        self, muscle: Muscle, uid: str, value: Any, where: str, method: str = "propose_actions"
    ) -> PluginContractError:
        space = self.actuator_spaces[self.actuator_uids.index(uid)]
        shown = value.item() if isinstance(value, np.generic) else value
        return PluginContractError(
            muscle,
            method,
            f"set actuator '{uid}' to {shown!r} {where}, which is not in its declared space "
            f"{space}; nothing was applied",
        )

    def _foreign(
        self, muscle: Muscle, values: dict[str, Any], method: str = "propose_actions"
    ) -> PluginContractError:
        """The error for set points of actuators this agent was not given."""
        foreign = sorted(str(uid) for uid in values if uid not in self.checks)
        given = ", ".join(self.actuator_uids[:10])
        more = f" and {len(self.actuator_uids) - 10} more" if len(self.actuator_uids) > 10 else ""
        return PluginContractError(
            muscle,
            method,
            f"set actuator {', '.join(map(repr, foreign))}, which agent '{self.agent}' "
            f"was not given (its actuators: {given or 'none'}{more}); nothing was applied",
        )


def unsendable(
    muscle: Muscle, values: dict[str, Any], step: int, episode: int, exc: Exception
) -> PluginError:
    """The error for a set point of ``muscle`` that cannot be sent (nothing of the step was
    sent)."""
    uid = unencodable_key(values) or "?"
    value = values.get(uid)
    cause = UnencodableValue(
        f"the value of set point '{uid}' ({type(value).__name__}) at step {step} of "
        f"episode {episode} cannot be sent: {exc}. Values must be numbers, strings, "
        "booleans, None, or lists and dicts of them (give the actuator a space to convert "
        "numpy values)"
    )
    error = PluginError(muscle, "propose_actions")
    error.__cause__ = cause
    return error
