"""Environments: the plug-in contract, the built-in DummyEnvironment and their processes."""

from palaestra.environment.dummy_environment import DummyEnvironment
from palaestra.environment.environment import (
    Environment,
    EnvironmentBaseline,
    EnvironmentContext,
    EnvironmentState,
)

__all__ = [
    "DummyEnvironment",
    "Environment",
    "EnvironmentBaseline",
    "EnvironmentContext",
    "EnvironmentState",
]
