"""``palaestrai.agent.dummy_brain``: palaestra's DummyBrain."""

from palaestra.agent.dummy_brain import DummyBrain

__all__ = ["DummyBrain"]
