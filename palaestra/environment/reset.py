"""palaestrAI's reset request and response, and how an environment's ``reset`` is called.

palaestra's :meth:`~palaestra.environment.Environment.reset` takes no argument. An environment
written for palaestrAI overrides ``async def reset(self, request)``: it is given an
:class:`EnvironmentResetRequest` with palaestrAI's public fields, awaited if it is a
coroutine, and may return what palaestrAI's returns, an :class:`EnvironmentResetResponse`
(or anything with ``sensors`` and ``actuators``), besides palaestra's baseline or tuple.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.simtime import SimTime


@dataclass(frozen=True)
class EnvironmentResetRequest:
    """What an environment's ``reset(request)`` is given (palaestrAI's public fields).

    Attributes:
        sender_simulation_controller_id: The simulation controller that resets it
            (``SimulationController-<worker>``).
        receiver_environment_id: The environment's uid in the run file.
        experiment_run_id: The run's uid.
        experiment_run_instance_id: This execution of the run (a UUID).
        experiment_run_phase: The index of the phase, from 0.
    """

    sender_simulation_controller_id: str
    receiver_environment_id: str
    experiment_run_id: str
    experiment_run_instance_id: str
    experiment_run_phase: int

    @property
    def sender(self) -> str:
        return self.sender_simulation_controller_id

    @property
    def receiver(self) -> str:
        return self.receiver_environment_id


@dataclass
class EnvironmentResetResponse:
    """What palaestrAI's ``reset(request)`` returns, field for field (palaestra reads
    ``sensors``, ``actuators`` and ``simtime``).

    It unpacks as ``(sensors, actuators)``, and awaiting it gives itself, so an override
    written for palaestrAI may ``await super().reset(request)`` as it did there.
    """

    sender_environment_id: str
    receiver_simulation_controller_id: str
    experiment_run_id: str
    experiment_run_instance_id: str
    experiment_run_phase: int
    environment_name: str
    create_new_instance: bool
    sensors: list[SensorInformation]
    actuators: list[ActuatorInformation]
    simtime: SimTime = field(default_factory=lambda: SimTime(simtime_ticks=0))
    walltime: datetime = field(default_factory=datetime.now)

    @property
    def sender(self) -> str:
        return self.sender_environment_id

    @property
    def receiver(self) -> str:
        return self.receiver_simulation_controller_id

    def __iter__(self) -> Iterator[Any]:
        return iter((self.sensors, self.actuators))

    def __await__(self) -> Generator[Any, None, EnvironmentResetResponse]:
        return self
        yield  # a generator: ``await response`` is the response


def takes_request(method: Callable[..., Any]) -> bool:
    """Whether a bound ``reset`` requires palaestrAI's request (a positional parameter
    without a default, as in ``reset(self, request)``); known once per function (a signature
    takes 8 µs to read, and a world asks at each reset)."""
    function = getattr(method, "__func__", None)
    try:
        known = _TAKES_REQUEST.get(function) if function is not None else None
    except TypeError:  # (a callable bound as a method that cannot be weakly referenced)
        function = known = None
    if known is not None:
        return known
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    takes = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in parameters
    )
    if function is not None:
        _TAKES_REQUEST[function] = takes
    return takes


_TAKES_REQUEST: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
"""What :func:`takes_request` found, by function (a reloaded class's is another)."""


def response_to(env: Any, request: EnvironmentResetRequest, started: Any) -> Any:
    """palaestrAI's response to ``request`` from what ``env.start_environment()`` returned
    (``started`` itself if it is no baseline or pair, for palaestra's checks to name)."""
    try:
        sensors, actuators = started
        sensors, actuators = list(sensors), list(actuators)
    except (TypeError, ValueError):
        return started
    simtime = getattr(started, "simtime", None)
    return EnvironmentResetResponse(
        sender_environment_id=str(env.uid),
        receiver_simulation_controller_id=request.sender,
        experiment_run_id=request.experiment_run_id,
        experiment_run_instance_id=request.experiment_run_instance_id,
        experiment_run_phase=request.experiment_run_phase,
        environment_name=str(env.uid),
        create_new_instance=False,
        sensors=sensors,
        actuators=actuators,
        simtime=simtime if isinstance(simtime, SimTime) else SimTime(simtime_ticks=0),
    )


async def restarted(env: Any, request: EnvironmentResetRequest | None) -> Any:
    """The default ``reset`` of an asynchronous environment, as palaestrAI's: ``shutdown()``
    then ``start_environment()``, each awaited if it is a coroutine."""
    stopped = env.shutdown()
    if inspect.isawaitable(stopped):
        await stopped
    started = env.start_environment()
    if inspect.isawaitable(started):
        started = await started
    return started if request is None else response_to(env, request, started)
