"""EnvironmentStateTransformer: rewrites each step's state, named by ``state_transformer:``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from palaestra.environment.environment import EnvironmentState

__all__ = ["EnvironmentStateTransformer"]


class EnvironmentStateTransformer(ABC):
    """Called with every step's :class:`EnvironmentState`; returns the state to use instead.

    A run file names one with the ``state_transformer:`` key of an environment item
    (``{name: module:Class, params: {...}}``); palaestra builds it with ``params`` as keyword
    arguments (kept in ``_params``, palaestrAI's name). After each ``update()`` of the
    environment (not after a start or reset) it gets the step's state, with the sensors'
    uids as agents see them (``"<env uid>.<sensor>"``), and what it returns is what the
    agents observe and the store records: its ``sensor_information`` (each a sensor the
    environment declared), ``rewards``, ``done`` and ``simtime``. A tuple
    ``(sensors, rewards, done)`` from the environment reaches it as an
    :class:`EnvironmentState` (``world_state``: the sensors, ``simtime``: None).
    """

    def __init__(self, **params: Any) -> None:
        self._params = params

    @abstractmethod
    def __call__(self, environment_state: EnvironmentState) -> EnvironmentState:
        """The state to use for this step."""

    def __str__(self) -> str:
        return f"{type(self).__name__}(id={id(self):x})"
