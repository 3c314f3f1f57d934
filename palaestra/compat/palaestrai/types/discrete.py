"""``palaestrai.types.discrete``: palaestra's Discrete."""

from palaestra.core.spaces import Discrete

__all__ = ["Discrete"]
