"""``palaestrai.agent.dummy_objective``: palaestra's DummyObjective."""

from palaestra.agent.dummy_objective import DummyObjective

__all__ = ["DummyObjective"]
