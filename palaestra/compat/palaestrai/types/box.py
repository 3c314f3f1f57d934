"""``palaestrai.types.box``: palaestra's Box."""

from palaestra.core.spaces import Box

__all__ = ["Box"]
