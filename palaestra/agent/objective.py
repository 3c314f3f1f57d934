"""The Objective plug-in contract: an agent's own reward, computed from its memory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from palaestra.agent.memory import Memory


class Objective(ABC):
    """Turns an agent's memory into one number per step.

    The run file's ``objective.params`` are passed to the constructor as keyword arguments.
    """

    def __init__(self, params: Any = None, **kwargs: Any) -> None:
        self.params = params if params is not None else kwargs

    @abstractmethod
    def internal_reward(self, memory: Memory, **kwargs: Any) -> float | None:
        """The objective value of the newest row of ``memory``."""
