"""``palaestrai.agent.brain``: palaestra's Brain."""

from palaestra.agent.brain import Brain

__all__ = ["Brain"]
