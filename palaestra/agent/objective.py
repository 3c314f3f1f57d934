"""The Objective plug-in contract: an agent's own reward, computed from its memory."""

from __future__ import annotations

import math
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from palaestra.agent.memory import Memory
from palaestra.core.plugin import PluginContractError, call, call_each


class Objective(ABC):
    """Turns an agent's memory into one number per step.

    The run file's ``objective.params`` are passed to the constructor as keyword arguments.
    """

    def __init__(self, params: Any = None, **kwargs: Any) -> None:
        self.params = params if params is not None else kwargs

    @abstractmethod
    def internal_reward(self, memory: Memory, **kwargs: Any) -> float | None:
        """The objective value of the newest row of ``memory``."""

    def internal_rewards(self, memories: Sequence[Memory]) -> Sequence[float | None]:
        """The objective value of the newest row of each of ``memories``: one per game of a
        round whose step completed (``phase_config.envs_per_worker``), in the order of the
        games. palaestra calls this once per round; the default calls :meth:`internal_reward`
        for each, so an Objective written for one game works unchanged. Override it to take
        a round's rows at once."""
        return [self.internal_reward(memory) for memory in memories]


def objective_values(objective: Any, memories: list[Memory]) -> list[float]:
    """The Objective's values of ``memories`` (see :meth:`Objective.internal_rewards`), each
    checked as :func:`objective_value` checks one."""
    if not memories:
        return []
    if per_row(type(objective)):
        each = call_each(objective.internal_reward, memories)
        return [v if type(v) is float else objective_value(objective, v) for v in each]
    found: Any = call(objective.internal_rewards, memories)
    try:
        values = list(found)
    except TypeError:
        values = []
    if len(values) != len(memories):
        raise PluginContractError(
            objective,
            "internal_rewards",
            f"returned {type(found).__name__} {reprlib.repr(found)}: expected one value per "
            f"memory ({len(memories)}), each a number or None",
        )
    return [
        v if type(v) is float else objective_value(objective, v, "internal_rewards")
        for v in values
    ]


def per_row(cls: type) -> bool:
    """Whether an Objective class answers a round row by row (``internal_reward`` for each
    memory): its ``internal_rewards`` is the base's (or it has none), or a subclass overrides
    ``internal_reward`` below the class that gave ``internal_rewards`` (a subclass of
    ``DummyObjective`` with its own ``internal_reward``: its method answers, and a failure
    names it)."""
    for klass in cls.__mro__:
        names = vars(klass)
        if "internal_rewards" in names:
            return klass is Objective
        if "internal_reward" in names:
            return True
    return True


def objective_value(objective: object, value: Any, method: str = "internal_reward") -> float:
    """What ``internal_reward`` returned, as the step's objective: a number (an int, a float,
    a numpy scalar or one-element array), NaN for None.

    Raises:
        PluginContractError: Anything else, naming the Objective, what it returned and the
            contract.
    """
    if value is None:
        return math.nan
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if not isinstance(value, str | bytes | bytearray) and kind not in _TEXT:
        try:  # (not text: float("1") would take a string for the number it spells)
            return float(value)
        except (TypeError, ValueError):
            if kind and kind in "fiu" and value.size == 1:
                return float(value.reshape(-1)[0])  # a one-element numeric array, any shape
    raise PluginContractError(
        objective,
        method,
        f"returned {type(value).__name__} {reprlib.repr(value)}: expected a number (an "
        "int, a float, a numpy scalar or one-element array), or None for none",
    )


_TEXT = ("U", "S")
"""The numpy kinds of text, which ``float`` would read as the number a text spells."""
