"""``palaestrai.types.multi_binary``: palaestra's MultiBinary."""

from palaestra.core.spaces import MultiBinary

__all__ = ["MultiBinary"]
