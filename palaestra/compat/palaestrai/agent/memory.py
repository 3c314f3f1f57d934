"""``palaestrai.agent.memory``: palaestra's Memory."""

from palaestra.agent.memory import Memory, MemoryShard

__all__ = ["Memory", "MemoryShard"]
