"""NormFilter: sensor values (and the Brain's objectives) normalised by running statistics."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from palaestra.agent.filter import Filter
from palaestra.agent.filters._values import RunningMeanStd, flat_values, set_flat_values
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode


class NormFilter(Filter):
    """The Muscle sees its sensor values as ``(v - mean) / sqrt(var + epsilon)``, clipped to
    ``±clip_obs``; in a train phase the statistics are updated every ``batch_size`` steps
    from the values it saw. With ``normalise_objective``, the Brain's newest objective of the
    Muscle that sent an experience is normalised the same way (clipped to ``±clip_reward``)
    once ``norm_objective_after`` experiences have come, from statistics updated every
    ``batch_size`` objectives.
    """

    def __init__(
        self,
        normalise_objective: bool = True,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
        batch_size: int = 256,
        norm_objective_after: int = 10_000,
    ) -> None:
        super().__init__()
        self.normalise_objective = normalise_objective
        self.clip_obs = clip_obs
        self.clip_reward = clip_reward
        self.epsilon = epsilon
        self.batch_size = int(batch_size)
        self.norm_objective_after = int(norm_objective_after)
        self.observations = RunningMeanStd(clip_obs, epsilon)
        self.objectives = RunningMeanStd(clip_reward, epsilon)
        self._values: deque[np.ndarray] = deque(maxlen=self.batch_size)
        self._objectives: deque[float] = deque(maxlen=self.batch_size)
        self._iteration = 0

    def setup(self) -> None:
        """Nothing to prepare: the statistics exist from the start."""

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        values = self.observations.normalize(flat_values(sensors))
        set_flat_values(values, sensors)
        if self.muscle is not None and self.muscle.mode == Mode.TRAIN and len(values):
            self._values.append(values)
            if len(self._values) == self.batch_size:
                self.observations.update(np.array(self._values))
                self._values.clear()
        return sensors, actuators_available

    def brain_pre_process(self, muscle_id: str, data_from_muscle: Any) -> tuple[str, Any]:
        if self.normalise_objective and self.brain is not None:
            objectives = self.brain.memory.muscle_memory(muscle_id).objective
            if not len(objectives):  # nothing yet: neither normalised nor counted
                return muscle_id, data_from_muscle
            objective = objectives[-1]
            if objective is not None and objective == objective:
                self._objectives.append(float(objective))
            if (self._objectives and len(self._objectives) % self.batch_size == 0) or (
                self._iteration == self.norm_objective_after
            ):
                self.objectives.update(np.array(self._objectives))
                self._objectives.clear()
            if self._iteration >= self.norm_objective_after and objective is not None:
                objectives[-1] = float(self.objectives.normalize(np.asarray(objective)))
        if data_from_muscle is not None:
            self._iteration += 1
        return muscle_id, data_from_muscle
