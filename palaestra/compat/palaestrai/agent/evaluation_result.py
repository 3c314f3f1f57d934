"""``palaestrai.agent.evaluation_result``."""

from palaestra.agent.evaluation_result import EvaluationResult

__all__ = ["EvaluationResult"]
