"""An environment written for palaestrAI that overrides ``async def reset(self, request)``.

It records every request it is given (a JSON line in ``resets.jsonl`` in the working
directory) and returns what palaestrAI's default returns, awaited from ``super()``; its one
sensor counts the resets, so the run's world states show that the reset's answer was used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from palaestrai.agent import ActuatorInformation, RewardInformation, SensorInformation
from palaestrai.core.protocol import EnvironmentResetRequest, EnvironmentResetResponse
from palaestrai.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestrai.types import Box

FIELDS = (
    "sender_simulation_controller_id",
    "receiver_environment_id",
    "experiment_run_id",
    "experiment_run_instance_id",
    "experiment_run_phase",
    "sender",
    "receiver",
)


class ResetRecordingEnvironment(Environment):
    def __init__(self, uid: str, broker_uri: str, seed: int, **params: Any) -> None:
        super().__init__(uid=uid, broker_uri=broker_uri, seed=seed)
        self.resets = 0
        self.steps = 0

    def start_environment(self) -> EnvironmentBaseline:
        self.steps = 0
        return EnvironmentBaseline(
            sensors_available=[
                SensorInformation(float(self.resets), Box(0.0, 100.0, shape=()), "resets")
            ],
            actuators_available=[ActuatorInformation(0.0, Box(-1.0, 1.0, shape=()), "act")],
        )

    def update(self, actuators: list[ActuatorInformation]) -> EnvironmentState:
        self.steps += 1
        return EnvironmentState(
            sensor_information=[
                SensorInformation(float(self.resets), Box(0.0, 100.0, shape=()), "resets")
            ],
            rewards=[RewardInformation(0.0, Box(-1.0, 1.0, shape=()), "zero")],
            done=self.steps >= 2,
        )

    async def reset(self, request: EnvironmentResetRequest) -> EnvironmentResetResponse:
        seen = {name: getattr(request, name) for name in FIELDS}
        seen["type"] = type(request).__name__
        with Path("resets.jsonl").open("a") as out:
            out.write(json.dumps(seen) + "\n")
        self.resets += 1
        response: EnvironmentResetResponse = await super().reset(request)
        return response
