"""``palaestrai.types.multi_discrete``: palaestra's MultiDiscrete."""

from palaestra.core.spaces import MultiDiscrete

__all__ = ["MultiDiscrete"]
