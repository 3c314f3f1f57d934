"""``palaestrai.agent.muscle``: palaestra's Muscle."""

from palaestra.agent.muscle import Muscle

__all__ = ["Muscle"]
