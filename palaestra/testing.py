"""Checks users run on their own plug-ins before a run: ``check_environment``, ``check_muscle``,
``check_brain``.

Each builds the plug-in the way palaestra does (constructor with the run file's params, the
context attached before ``setup``), drives it through its contract for a few steps in this
process, and raises :class:`PluginCheckError` naming the method and what is wrong::

    from palaestra.testing import check_environment
    check_environment("my_pkg.grid:GridEnvironment", {"size": 4})
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np

from palaestra.agent.brain import Brain
from palaestra.agent.context import BrainContext, BrainDumps, MuscleContext
from palaestra.agent.muscle import Muscle
from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.loading import load_class
from palaestra.core.specs import EnvironmentSpec
from palaestra.environment.environment import Environment, EnvironmentContext
from palaestra.environment.environment_process import construct


class PluginCheckError(InvalidInputError):
    """A plug-in does not keep its contract; the message names the method and the problem."""


def check_environment(
    environment: str | type[Environment], params: dict[str, Any] | None = None, steps: int = 3
) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
    """Start, step (with sampled set points), reset and shut down an environment.

    Returns the sensors and actuators of its baseline, as agents would see them unprefixed.
    """
    name = environment if isinstance(environment, str) else _name(environment)
    env = construct(EnvironmentSpec(name=name, uid="checked", params=params or {}), seed=0)
    env.attach(EnvironmentContext(uid="checked", worker=0, seed=0))
    sensors, actuators = _baseline(env, "start_environment")
    for actuator in actuators:
        if actuator.space is not None:
            actuator.space.seed(0)
    for _ in range(steps):
        state = _call(
            env,
            "update",
            [
                ActuatorInformation(a.space.sample() if a.space else a.value, a.space, a.uid)
                for a in actuators
            ],
        )
        _state(env, state, {str(s.uid) for s in sensors})
    _baseline(env, "reset")
    _call(env, "shutdown")
    return sensors, actuators


def check_muscle(
    muscle: str | type[Muscle],
    params: dict[str, Any] | None = None,
    *,
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
    steps: int = 3,
) -> None:
    """Set up a Muscle, let it act on ``sensors`` and check its set points and brain data."""
    instance = _construct(muscle, params)
    if not isinstance(instance, Muscle):
        raise PluginCheckError(f"{_name(type(instance))} is not a palaestra Muscle")
    instance.attach(
        MuscleContext(
            name="checked",
            uid="checked-0",
            worker=0,
            mode="train",
            seed=0,
            sensors=list(sensors),
            actuators=list(actuators),
            rng=np.random.default_rng(0),
        )
    )
    _call(instance, "setup")
    uids = {str(a.uid) for a in actuators}
    for _ in range(steps):
        available = [ActuatorInformation(None, a.space, a.uid) for a in actuators]
        answer = _call(instance, "propose_actions", list(sensors), available)
        if not (isinstance(answer, tuple) and len(answer) == 2):
            _fail(instance, "propose_actions", "must return (set points, data for the brain)")
        setpoints, data = answer
        for setpoint in setpoints:
            if str(setpoint.uid) not in uids:
                _fail(
                    instance, "propose_actions", f"set point for unknown actuator {setpoint.uid}"
                )
            if setpoint.space is not None and not setpoint.space.contains(setpoint.value):
                _fail(
                    instance,
                    "propose_actions",
                    f"value {setpoint.value!r} of {setpoint.uid} is not in {setpoint.space}",
                )
        _picklable(instance, "propose_actions", data)
        _call(instance, "update", None)
    _call(instance, "reset")
    _call(instance, "teardown")


def check_brain(
    brain: str | type[Brain],
    params: dict[str, Any] | None = None,
    *,
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
    data: Sequence[Any] = (None, 0, 1),
) -> None:
    """Set up a Brain, let it think about ``data``, and round-trip it through a brain dump."""
    written: list[bytes] = []
    instance = _construct(brain, params)
    if not isinstance(instance, Brain):
        raise PluginCheckError(f"{_name(type(instance))} is not a palaestra Brain")
    context = BrainContext(
        name="checked",
        run_uid="check",
        phase_index=0,
        phase_name="check",
        mode="train",
        seed=0,
        sensors=list(sensors),
        actuators=list(actuators),
        dumps=BrainDumps(write=lambda d, tag: written.append(d)),
    )
    instance.attach(context)
    _call(instance, "setup")
    _call(instance, "load")
    for item in data:
        _picklable(instance, "thinking", _call(instance, "thinking", "checked-0", item))
    _call(instance, "store")
    if written:  # a brain that dumps must be able to start from its dump
        again = _construct(brain, params)
        again.attach(dataclasses.replace(context, dumps=BrainDumps(loaded=written[-1])))
        _call(again, "setup")
        _call(again, "load")
    _call(instance, "teardown")


# --- helpers -------------------------------------------------------------------------------


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _construct(plugin: str | type, params: dict[str, Any] | None) -> Any:
    cls = load_class(plugin) if isinstance(plugin, str) else plugin
    try:
        return cls(**(params or {}))
    except Exception as exc:
        raise PluginCheckError(f"{_name(cls)}(**{params or {}}) failed: {exc!r}") from exc


def _call(plugin: Any, method: str, *args: Any) -> Any:
    try:
        return getattr(plugin, method)(*args)
    except PluginCheckError:
        raise
    except Exception as exc:
        raise PluginCheckError(f"{_name(type(plugin))}.{method} raised {exc!r}") from exc


def _fail(plugin: Any, method: str, problem: str) -> None:
    raise PluginCheckError(f"{_name(type(plugin))}.{method}: {problem}")


def _picklable(plugin: Any, method: str, value: Any) -> None:
    try:
        pickle.dumps(value)
    except Exception as exc:
        _fail(plugin, method, f"returned {type(value).__name__}, which cannot be pickled ({exc})")


def _baseline(env: Environment, method: str) -> tuple[list[Any], list[Any]]:
    result = _call(env, method)
    try:
        sensors, actuators = tuple(result)[:2]
    except (TypeError, ValueError):
        _fail(env, method, f"must return (sensors, actuators), got {result!r}")
    for kind, infos, cls in (
        ("sensor", sensors, SensorInformation),
        ("actuator", actuators, ActuatorInformation),
    ):
        uids = [str(i.uid) for i in infos]
        if len(set(uids)) != len(uids):
            _fail(env, method, f"{kind} uids are not unique: {uids}")
        for info in infos:
            if not isinstance(info, cls):
                _fail(env, method, f"{kind} {info!r} is not a {cls.__name__}")
            if info.space is None:
                _fail(env, method, f"{kind} {info.uid} has no space")
    return list(sensors), list(actuators)


def _state(env: Environment, state: Any, sensor_uids: set[str]) -> None:
    try:
        sensors, rewards, done = tuple(state)[:3]
    except (TypeError, ValueError):
        _fail(env, "update", f"must return (sensors, rewards, done), got {state!r}")
    missing = sensor_uids - {str(s.uid) for s in sensors}
    if missing:
        _fail(env, "update", f"no longer reports sensors {sorted(missing)}")
    for sensor in sensors:
        if sensor.space is not None and not sensor.space.contains(sensor.value):
            _fail(
                env, "update", f"sensor {sensor.uid} = {sensor.value!r} is not in {sensor.space}"
            )
    if not all(isinstance(r, RewardInformation) for r in rewards):
        _fail(env, "update", "rewards must be RewardInformation objects")
    if not isinstance(done, bool | np.bool_):
        _fail(env, "update", f"done must be a bool, got {done!r}")
