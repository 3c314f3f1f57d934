"""``palaestrai.experiment.max_episodes_termination_condition``."""

from palaestra.experiment.termination import MaxEpisodesTerminationCondition

__all__ = ["MaxEpisodesTerminationCondition"]
