"""``palaestrai.types.space``: palaestra's Space."""

from palaestra.core.spaces import Space

__all__ = ["Space"]
