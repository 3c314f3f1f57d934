"""``palaestrai.experiment.agent_evaluation_objective_termination_condition``."""

from palaestra.experiment.evaluation import AgentEvaluationObjectiveTerminationCondition

__all__ = ["AgentEvaluationObjectiveTerminationCondition"]
