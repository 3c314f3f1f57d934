"""``palaestrai.agent.dummy_muscle``: palaestra's DummyMuscle."""

from palaestra.agent.dummy_muscle import DummyMuscle

__all__ = ["DummyMuscle"]
