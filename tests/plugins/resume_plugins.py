"""Deterministic plug-ins for resume tests: a Brain whose whole state is in its dump, and a
Muscle that carries nothing over from one episode to the next.

``TotalBrain`` answers each Muscle with the running total of everything it was sent (over all
episodes, so an episode's actions depend on every earlier one); its dump is that total.
``EvaluatingTotalBrain`` judges evaluations (``evaluate_rollouts``) with a score that depends
on the evaluation's index alone.
``TotalMuscle`` sets each Discrete actuator to (its first sensor + the Brain's last answer)
modulo the space; it forgets the answer when the first sensor reads 0 (DummyEnvironment's
first step of an episode), so a fresh Muscle acts as a continuing one would.
"""

from __future__ import annotations

import json
import os
from typing import Any

from palaestra.agent import Brain, EvaluationResult, Muscle


class TotalBrain(Brain):
    def __init__(self) -> None:
        self.total = 0

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        self.total += int(data_from_muscle or 0)
        return self.total

    def store(self) -> None:
        self.store_brain_dump(json.dumps({"total": self.total}).encode())

    def load(self) -> None:
        dump = self.load_brain_dump()
        if dump is not None:
            self.total = int(json.loads(dump.read())["total"])


class TotalMuscle(Muscle):
    def __init__(self) -> None:
        self.last = 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        first = int(sensors[0].value)
        if first == 0:
            self.last = 0
        for actuator in actuators_available:
            actuator((first + self.last) % actuator.space.n)
        return actuators_available, first + 1

    def update(self, update: Any) -> None:
        if update is not None:
            self.last = int(update)


class PretrainedTotalBrain(TotalBrain):
    """A :class:`TotalBrain` whose pre-training (``replay``) adds 7 to its total: pre-trained
    twice, its Muscle's actions differ."""

    def pretrain(self) -> None:
        self.total += 7


class TrainDumpTotalBrain(TotalBrain):
    """A :class:`TotalBrain` that learns and stores its dump in train phases only: in a test
    phase it answers with its total as loaded and stores nothing."""

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.mode == "train":
            return super().thinking(muscle_id, data_from_muscle)
        return self.total

    def store(self) -> None:
        if self.mode == "train":
            super().store()


class FailOnceMuscle(TotalMuscle):
    """A :class:`TotalMuscle` that fails its ``after``-th step while the file ``flag`` exists."""

    def __init__(self, flag: str = "", after: int = 0) -> None:
        super().__init__()
        self.flag, self.after, self.steps = flag, after, 0

    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        self.steps += 1
        if self.steps == self.after and os.path.exists(self.flag):
            raise RuntimeError("failing once, as the test asked")
        return super().propose_actions(sensors, actuators_available)


class EvaluatingTotalBrain(TotalBrain):
    """A :class:`TotalBrain` whose ``evaluate_rollouts`` scores evaluation ``episode`` (its
    index) ``start + rise * episode``; ``nan_at``: the index of one evaluation it scores
    NaN (-1: none)."""

    def __init__(self, start: float = 1.0, rise: float = 0.0, nan_at: int = -1) -> None:
        super().__init__()
        self.start, self.rise, self.nan_at = start, rise, nan_at

    def evaluate_rollouts(
        self,
        experiment_run_uid: str,
        experiment_run_instance_uid: str,
        experiment_run_phase: int,
        agent_name: str,
        episode: int,
    ) -> EvaluationResult:
        score = float("nan") if episode == self.nan_at else self.start + self.rise * episode
        return EvaluationResult(metrics={"score": score, "total": float(self.total)})
