"""The Objective plug-in contract: an agent's own reward, computed from its memory."""

from __future__ import annotations

import math
import reprlib
from abc import ABC, abstractmethod
from typing import Any

from palaestra.agent.memory import Memory
from palaestra.core.plugin import PluginContractError


class Objective(ABC):
    """Turns an agent's memory into one number per step.

    The run file's ``objective.params`` are passed to the constructor as keyword arguments.
    """

    def __init__(self, params: Any = None, **kwargs: Any) -> None:
        self.params = params if params is not None else kwargs

    @abstractmethod
    def internal_reward(self, memory: Memory, **kwargs: Any) -> float | None:
        """The objective value of the newest row of ``memory``."""


def objective_value(objective: object, value: Any) -> float:
    """What ``internal_reward`` returned, as the step's objective: a number (an int, a float,
    a numpy scalar or one-element array), NaN for None.

    Raises:
        PluginContractError: Anything else, naming the Objective, what it returned and the
            contract.
    """
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        if kind and kind in "fiu" and value.size == 1:
            return float(value.reshape(-1)[0])  # a one-element numeric array, of any shape
        raise PluginContractError(
            objective,
            "internal_reward",
            f"returned {type(value).__name__} {reprlib.repr(value)}: expected a number (an "
            "int, a float, a numpy scalar or one-element array), or None for none",
        ) from None
