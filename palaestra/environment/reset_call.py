"""How palaestra calls an environment's ``reset``: as its signature asks, awaited if it returns
a coroutine, its answer (palaestra's baseline, a tuple, or palaestrAI's response) as a baseline.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any

from palaestra.core.plugin import PluginContractError, PluginError, call
from palaestra.core.simtime import SimTime
from palaestra.environment.checks import show
from palaestra.environment.environment import EnvironmentBaseline
from palaestra.environment.reset import (
    EnvironmentResetRequest,
    EnvironmentResetResponse,
    takes_request,
)


def call_reset(env: Any, request: EnvironmentResetRequest, awaiter: Any = None) -> Any:
    """Call ``env.reset`` as its signature asks (with ``request`` or without), await a
    coroutine (on ``awaiter``'s event loop, :class:`palaestra.environment.aio.Awaiter`: the
    environment's tasks keep running there; without one, on a loop of its own), and give a
    response's ``(sensors, actuators)`` with its simtime as a baseline.

    Raises:
        PluginError: ``reset`` (or the coroutine it returned) raised.
        PluginContractError: Its response's ``sensors`` or ``actuators`` are no list.
    """
    method = env.reset
    result = call(method, request) if takes_request(method) else call(method)
    if inspect.isawaitable(result) and not isinstance(result, EnvironmentResetResponse):
        if awaiter is not None:
            result = awaiter(env, "reset", result)
        else:
            try:
                result = asyncio.run(_awaited(result))
            except Exception as exc:  # noqa: BLE001 - the plug-in's coroutine, named as its reset
                raise PluginError(env, "reset") from exc
    if hasattr(result, "sensors") and hasattr(result, "actuators"):  # (a response, or alike)
        simtime = getattr(result, "simtime", None)
        return EnvironmentBaseline(
            _listed(env, result, "sensors"),
            _listed(env, result, "actuators"),
            simtime if isinstance(simtime, SimTime) else SimTime(simtime_ticks=0),
        )
    return result


def _listed(env: Any, response: Any, name: str) -> list[Any]:
    """The response's ``sensors`` or ``actuators`` (``name``) as a list (palaestra's checks
    look at each item).

    Raises:
        PluginContractError: They are no list (None, a number).
    """
    items = getattr(response, name)
    try:
        return list(items)
    except TypeError:
        raise PluginContractError(
            env,
            "reset",
            f"returned {type(response).__name__} with {name} = {show(items)}, expected a list "
            f"of {'Sensor' if name == 'sensors' else 'Actuator'}Information",
        ) from None


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
