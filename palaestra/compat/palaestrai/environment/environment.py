"""``palaestrai.environment.environment``: palaestra's Environment."""

from palaestra.environment.environment import Environment

__all__ = ["Environment"]
