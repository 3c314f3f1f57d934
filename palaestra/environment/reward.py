"""Reward: the base class of a reward calculation named by an environment's ``reward:`` key."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from palaestra.core.information import RewardInformation

__all__ = ["Reward"]


class Reward(ABC):
    """Computes a reward from one or more environment states.

    A run file names one with the ``reward:`` key of an environment item
    (``{name: module:Class, params: {...}}``); palaestra builds it with ``params`` as keyword
    arguments (kept in ``_parameters``, palaestrAI's name) and sets it as the environment's
    :attr:`~palaestra.environment.environment.Environment.reward` before its start. The
    environment calls it itself, with the state(s) it wants rewarded; palaestra never does.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._parameters = kwargs

    @abstractmethod
    def __call__(self, *states: Any) -> RewardInformation:
        """The reward of the newest of ``states``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}(id=0x{id(self):x})"
