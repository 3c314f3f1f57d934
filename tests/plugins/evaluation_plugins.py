"""A palaestrAI-style Brain that judges its evaluations (``evaluate_rollouts``).

Its score is ``start + rise * episode`` (``episode``: the evaluation's index); each call is
appended as a JSON line to the file ``log`` with its arguments and the number of Muscle
messages the Brain had thought about by then.
"""

from __future__ import annotations

import json
from typing import Any

from palaestrai.agent import EvaluationResult
from palaestrai_style import GainBrain


class EvaluatingBrain(GainBrain):
    """GainBrain with an ``evaluate_rollouts`` whose score changes per evaluation."""

    def __init__(
        self, log: str, start: float = 0.0, rise: float = 0.0, wrong: bool = False, **params: Any
    ) -> None:
        super().__init__()
        self.log = log
        self.start = start
        self.rise = rise
        self.wrong = wrong  # return a dict, not an EvaluationResult

    def evaluate_rollouts(
        self,
        experiment_run_uid: str,
        experiment_run_instance_uid: str,
        experiment_run_phase: int,
        agent_name: str,
        episode: int,
    ) -> Any:
        call = {
            "run": experiment_run_uid,
            "instance": experiment_run_instance_uid,
            "phase": experiment_run_phase,
            "agent": agent_name,
            "episode": episode,
            "seen": self.seen,
        }
        with open(self.log, "a") as f:
            f.write(json.dumps(call) + "\n")
        score = self.start + self.rise * episode
        return {"score": score} if self.wrong else EvaluationResult(metrics={"score": score})
