"""``palaestrai.environment.reward``: palaestra's Reward, the base class of an environment's
reward calculation."""

from palaestra.environment.reward import Reward

__all__ = ["Reward"]
