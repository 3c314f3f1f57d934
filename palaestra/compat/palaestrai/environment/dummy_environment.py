"""``palaestrai.environment.dummy_environment``: palaestra's DummyEnvironment."""

from palaestra.environment.dummy_environment import DummyEnvironment

__all__ = ["DummyEnvironment"]
