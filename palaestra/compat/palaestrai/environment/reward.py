"""``palaestrai.environment.reward``: the base class of an environment's reward calculation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from palaestra.core.information import RewardInformation

__all__ = ["Reward"]


class Reward(ABC):
    """Computes a reward from one or more environment states; the constructor keeps its
    keyword parameters (palaestrAI's ``_parameters``). Environments call it themselves."""

    def __init__(self, **kwargs: Any) -> None:
        self._parameters = kwargs

    @abstractmethod
    def __call__(self, *states: Any) -> RewardInformation:
        """The reward of the newest of ``states``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}(id=0x{id(self):x})"
