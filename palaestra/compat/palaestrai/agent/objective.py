"""``palaestrai.agent.objective``: palaestra's Objective."""

from palaestra.agent.objective import Objective

__all__ = ["Objective"]
