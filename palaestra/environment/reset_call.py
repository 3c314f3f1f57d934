"""How palaestra calls an environment's ``reset``: as its signature asks, awaited if it returns
a coroutine, its answer (palaestra's baseline, a tuple, or palaestrAI's response) as a baseline.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any

from palaestra.core.plugin import PluginError, call
from palaestra.core.simtime import SimTime
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
            list(result.sensors),
            list(result.actuators),
            simtime if isinstance(simtime, SimTime) else SimTime(simtime_ticks=0),
        )
    return result


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
