"""What a Brain's ``evaluate_rollouts`` returns: the metrics of one completed evaluation."""

from __future__ import annotations

import dataclasses
from typing import Any

from palaestra.core.wire import messages as m


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    """The metrics a Brain computed after the rollouts of one evaluation (palaestrAI's
    ``palaestrai.agent.EvaluationResult``).

    ``metrics`` are named numbers; a termination condition reading one needs it finite.
    ``checkpoint_id`` and ``checkpoint_hash`` optionally name the model that was evaluated.
    """

    metrics: dict[str, float] = dataclasses.field(default_factory=dict)
    checkpoint_id: str | None = None
    checkpoint_hash: str | None = None


def evaluated(agent: str, evaluation: int, result: EvaluationResult | None) -> m.AgentEvaluated:
    """The message carrying ``result`` (None: the Brain returned none)."""
    if result is None:
        return m.AgentEvaluated(agent=agent, evaluation=evaluation, result=False)
    return m.AgentEvaluated(
        agent=agent,
        evaluation=evaluation,
        result=True,
        metrics={str(k): _number(v) for k, v in dict(result.metrics).items()},
        checkpoint_id=_text(result.checkpoint_id),
        checkpoint_hash=_text(result.checkpoint_hash),
    )


def _number(value: Any) -> float | None:
    """``value`` as a float if it is a real number (a numpy scalar too), else None."""
    if isinstance(value, str | bytes) or not hasattr(value, "__float__"):
        return None
    try:
        return float(value)  # NaN and infinities stay: a condition counts them as invalid
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
