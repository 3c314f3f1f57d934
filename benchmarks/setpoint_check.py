"""What checking a Muscle's set points costs per step (5 Discrete actuators).

    python benchmarks/setpoint_check.py

Times ``MuscleProcess.setpoint_values`` (one pass: each set point's uid, its value in the
actuator's declared space, its JSON value) against the two variants it replaced, copied here:
two passes (values, then the space check), and no space check at all. timeit, the minimum of
5 x 100,000 calls, on a stand-in for the process (only the fields the method reads).
"""

from __future__ import annotations

import functools
import timeit
import types
from typing import Any

from palaestra.agent.muscle_process import MuscleProcess
from palaestra.core.information import ActuatorInformation, json_value
from palaestra.core.space_checks import value_check
from palaestra.core.spaces import Discrete

SPACE = Discrete(100)
UIDS = [f"env.{i}" for i in range(5, 10)]
SETPOINTS = [ActuatorInformation(i, SPACE, uid) for i, uid in enumerate(UIDS)]
PROCESS = types.SimpleNamespace(
    setpoint_checks={uid: value_check(SPACE) for uid in UIDS}, actuator_set=frozenset(UIDS)
)


def two_passes(self: Any, setpoints: Any, step: int, episode: int) -> dict[str, Any]:
    values = {str(a.uid): json_value(a) for a in setpoints}
    if not values.keys() <= self.actuator_set:
        raise ValueError("foreign")
    for actuator in setpoints:
        if not self.setpoint_checks[str(actuator.uid)](actuator.value):
            raise ValueError("outside")
    return values


def unchecked(self: Any, setpoints: Any, step: int, episode: int) -> dict[str, Any]:
    values = {str(a.uid): json_value(a) for a in setpoints}
    if not values.keys() <= self.actuator_set:
        raise ValueError("foreign")
    return values


def main() -> None:
    for name, method in (
        ("one pass (palaestra)", MuscleProcess.setpoint_values),
        ("two passes", two_passes),
        ("no space check", unchecked),
    ):
        call = functools.partial(method, PROCESS, SETPOINTS, 1, 0)
        best = min(timeit.repeat(call, number=100_000))
        print(f"{name:22} {best / 100_000 * 1e6:.2f} us per step")


if __name__ == "__main__":
    main()
