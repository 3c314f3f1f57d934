"""palaestrAI's module path of :class:`AgentObjectiveTerminationCondition`."""

from palaestra.experiment.termination import AgentObjectiveTerminationCondition

__all__ = ["AgentObjectiveTerminationCondition"]
