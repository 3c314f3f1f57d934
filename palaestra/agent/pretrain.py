"""Offline learning in the Brain's process: recorded steps into a memory, then ``pretrain``.

As palaestrAI's learner does: after the Brain's ``setup``, the recorded steps its ``replay``
names fill the Brain's :attr:`~palaestra.agent.brain.Brain.memory`, ``pretrain`` is called,
and the Brain then starts its phase with an empty memory (palaestra keeps the memory with the
limits the run file and the Brain's ``setup`` gave it; the recorded steps go into a memory of
their own, large enough for all of them). Each episode of each recorded worker (and each
repetition) is kept under a muscle uid of its own, palaestrAI's
``pretrainer:<source index>:<repetition>:<worker>:<episode>``, so no transition spans two
episodes and any number of recorded workers can be fed (palaestrAI refuses more than one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from palaestra.agent.brain import Brain
from palaestra.agent.lazy_rows import SetpointRow, native
from palaestra.agent.memory import Memory
from palaestra.core.information import RewardInformation, SensorInformation
from palaestra.core.plugin import call
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import reward_items


def pretrain(
    brain: Brain,
    steps: Sequence[m.RecordedSteps],
    sensors: Sequence[SensorInformation],
    actuator_spaces: dict[str, Any],
) -> int:
    """Fill a memory with ``steps``, give it to ``brain`` while its ``pretrain`` runs, then
    give the Brain its own memory back; return how many rows were fed.

    Args:
        brain: The Brain, set up.
        steps: The recorded steps, per source and worker.
        sensors: The agent's sensors (before its filters), in its order: the recorded
            readings are given in this order, with these spaces.
        actuator_spaces: The space of each actuator, by uid.
    """
    total = sum(len(s.rows) * s.repeat for s in steps)
    replayed = Memory(size_limit=max(total, 1))
    setpoints = SetpointRow(actuator_spaces)
    for recorded in steps:
        for copy in range(recorded.repeat):
            for row in recorded.rows:
                uid = f"pretrainer:{recorded.index}:{copy}:{recorded.worker}:{row.episode}"
                replayed.append(
                    uid,
                    sensor_readings=_readings(sensors, row.sensors),
                    actuator_setpoints=setpoints(row.setpoints),
                    rewards=[RewardInformation(v, None, r) for r, v in reward_items(row.rewards)],
                    done=row.done,
                    objective=row.objective,
                )
    own = brain.memory
    brain._memory = replayed
    try:
        call(brain.pretrain)
    finally:
        brain._memory = own
    return total


def _readings(
    sensors: Sequence[SensorInformation], values: dict[str, Any]
) -> list[SensorInformation]:
    return [
        SensorInformation(native(s.space, values[str(s.uid)]), s.space, s.uid)
        for s in sensors
        if str(s.uid) in values
    ]
