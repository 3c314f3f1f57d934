"""``palaestrai.agent.brain_dumper``: palaestra's BrainDumper."""

from palaestra.agent.brain_dumper import BrainDumper

__all__ = ["BrainDumper"]
