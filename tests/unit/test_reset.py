"""How an environment's ``reset`` is called: palaestra's, or palaestrAI's ``reset(request)``."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.plugin import PluginContractError, PluginError
from palaestra.core.simtime import SimTime
from palaestra.core.spaces import Box
from palaestra.environment import Environment, EnvironmentBaseline, EnvironmentContext
from palaestra.environment.reset import (
    EnvironmentResetRequest,
    EnvironmentResetResponse,
    takes_request,
)
from palaestra.environment.reset_call import call_reset

REQUEST = EnvironmentResetRequest(
    sender_simulation_controller_id="SimulationController-1",
    receiver_environment_id="env",
    experiment_run_id="run",
    experiment_run_instance_id="instance",
    experiment_run_phase=2,
)


class Plain(Environment):
    def start_environment(self) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        return [SensorInformation(1.0, Box(0.0, 2.0, shape=()), "s")], []

    def update(self, actuators: Any) -> Any:
        raise NotImplementedError


class Seen(Plain):
    """palaestrAI's signature, awaiting palaestra's default."""

    seen: list[EnvironmentResetRequest]

    async def reset(self, request: EnvironmentResetRequest) -> EnvironmentResetResponse:
        self.seen = [request]
        await asyncio.sleep(0)
        response: EnvironmentResetResponse = await super().reset(request)
        response.simtime = SimTime(simtime_ticks=7)
        return response


class Failing(Plain):
    async def reset(self, request: EnvironmentResetRequest) -> Any:
        raise RuntimeError("broken reset")


def attached(env: Environment) -> Environment:
    env.attach(EnvironmentContext(uid="env", worker=1, seed=0))
    return env


def test_palaestras_reset_is_called_without_a_request() -> None:
    env = attached(Plain())
    assert not takes_request(env.reset)
    sensors, actuators = call_reset(env, REQUEST)
    assert [s.uid for s in sensors] == ["s"] and actuators == []


def test_palaestrais_reset_gets_the_request_and_its_response_starts_the_episode() -> None:
    env = attached(Seen())
    assert takes_request(env.reset)
    baseline = call_reset(env, REQUEST)
    assert env.seen == [REQUEST]  # type: ignore[attr-defined]
    assert REQUEST.sender == "SimulationController-1" and REQUEST.receiver == "env"
    assert isinstance(baseline, EnvironmentBaseline)
    assert [s.uid for s in baseline.sensors_available] == ["s"]
    assert baseline.simtime.simtime_ticks == 7


def test_whether_a_reset_takes_the_request_is_read_once_per_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A world asks at each reset: the signature is read once for each class's ``reset`` (a
    class made again, as a hot reload makes it, is asked again)."""
    read: list[Any] = []
    signature = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda f: read.append(f) or signature(f))

    def made() -> tuple[type[Plain], type[Plain]]:  # (classes of their own: asked afresh)
        return (
            type("Own", (Plain,), {"reset": lambda self: None}),
            type("Asks", (Plain,), {"reset": lambda self, request: None}),
        )

    own, asks = made()
    answers = [takes_request(kind().reset) for kind in (own, asks, own, asks)]
    assert answers == [False, True, False, True] and len(read) == 2
    own, asks = made()
    assert [takes_request(own().reset), takes_request(asks().reset)] == [False, True]
    assert len(read) == 4


def test_the_default_answers_a_request_with_palaestrais_response() -> None:
    response = attached(Plain()).reset(REQUEST)
    assert isinstance(response, EnvironmentResetResponse)
    assert (response.sender, response.receiver) == ("env", "SimulationController-1")
    assert (response.experiment_run_id, response.experiment_run_phase) == ("run", 2)
    assert response.environment_name == "env" and not response.create_new_instance


def test_a_failing_coroutine_is_named_as_the_environments_reset() -> None:
    with pytest.raises(PluginError, match=r"Failing\.reset") as caught:
        call_reset(attached(Failing()), REQUEST)
    assert isinstance(caught.value.__cause__, RuntimeError)


class OddResponse(Plain):
    """palaestrAI's response with sensors (or actuators) that are no list."""

    field = "sensors"

    async def reset(self, request: EnvironmentResetRequest) -> EnvironmentResetResponse:
        response: EnvironmentResetResponse = await super().reset(request)
        setattr(response, self.field, None)
        return response


@pytest.mark.parametrize(("field", "kind"), [("sensors", "Sensor"), ("actuators", "Actuator")])
def test_a_response_whose_sensors_are_no_list_fails_naming_the_environments_reset(
    field: str, kind: str
) -> None:
    """It failed the run with palaestra's ``TypeError: 'NoneType' object is not iterable``."""
    env = OddResponse()
    env.field = field
    with pytest.raises(PluginContractError) as caught:
        call_reset(attached(env), REQUEST)
    assert str(caught.value).startswith(
        f"tests.unit.test_reset:OddResponse.reset returned EnvironmentResetResponse with {field} "
        f"= None, expected a list of {kind}Information"
    ), str(caught.value)
