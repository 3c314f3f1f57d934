"""``palaestrai.types.tuple``: palaestra's Tuple."""

from palaestra.core.spaces import Tuple

__all__ = ["Tuple"]
