"""Environments: the plug-in contract, the built-in DummyEnvironment and their processes."""

from palaestra.environment.dummy_environment import DummyEnvironment
from palaestra.environment.environment import (
    Environment,
    EnvironmentBaseline,
    EnvironmentContext,
    EnvironmentState,
)
from palaestra.environment.environment_state_transformer import EnvironmentStateTransformer
from palaestra.environment.reward import Reward

__all__ = [
    "DummyEnvironment",
    "Environment",
    "EnvironmentBaseline",
    "EnvironmentContext",
    "EnvironmentState",
    "EnvironmentStateTransformer",
    "Reward",
]
