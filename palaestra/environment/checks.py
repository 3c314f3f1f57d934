"""Passive checks of what an environment returns, in the environment's own process.

Like gymnasium's ``PassiveEnvChecker``: every start and reset, and the first step after each,
are checked in full (the returned structure, the types of sensors, actuators and rewards,
unique and known sensor uids, every sensor value and reward in its declared space, ``done`` a
bool). Later steps keep a cheap check, each sensor value and reward in its space, which the
simulation param ``check_values: false`` switches off. An ``EnvironmentState``'s
``terminated`` and ``truncated`` are read at every step, and checked as they are read
(:func:`end_flag`): a bool or None. A failure is a
:class:`~palaestra.core.plugin.PluginContractError` naming the environment's class, the method,
the uid and the value: the environment is blamed, not the Muscle that would trip over it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from palaestra.core.information import (
    ActuatorInformation,
    Information,
    RewardInformation,
    SensorInformation,
)
from palaestra.core.plugin import PluginContractError
from palaestra.core.spaces import Space

LOG = logging.getLogger(__name__)

InfoT = TypeVar("InfoT", bound=Information)
Fix = Callable[[object, str, str, Any, "Space | None"], Any]
"""Gives a copy of a value's information reshaped into its space, or None: see
:class:`palaestra.environment.shapes.ShapeFix`."""


BASELINE = "(sensors, actuators) or an EnvironmentBaseline"
"""What ``start_environment`` (or ``reset``) returns, as palaestrAI takes it."""


def baseline(
    env: object,
    method: str,
    result: Any,
    repeated: list[str] | None = None,
    fix: Fix | None = None,
) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
    """Check what ``start_environment`` or ``reset`` returned; returns sensors, actuators.

    An actuator given again with the same uid and space is dropped, its uid added to
    ``repeated`` (palaestrAI's random environments append their actuators to
    ``self.actuators`` on every start); one with another space fails.
    """
    parts = _parts(env, method, result, 2, BASELINE)
    if len(parts) != 2:  # (palaestrAI unpacks a tuple into two: a third item fails there)
        raise PluginContractError(
            env,
            method,
            f"returned {show(result)}, {len(parts)} items: expected {BASELINE} (to give a sim "
            "time, return EnvironmentBaseline(sensors, actuators, simtime))",
        )
    sensors, actuators = list(parts[0]), list(parts[1])
    for kind, infos, cls in (
        ("sensor", sensors, SensorInformation),
        ("actuator", actuators, ActuatorInformation),
    ):
        uids = [_typed(env, method, kind, i, cls) for i in infos]
        if kind == "actuator" and len(set(uids)) < len(uids):
            infos[:], uids = _repeats_dropped(infos, uids, repeated)
        _unique(env, method, kind, uids)
        for i, info in enumerate(infos):
            if kind == "sensor" or info.value is not None:  # an actuator may have no default
                infos[i] = _contained(env, method, kind, info, info.space, fix)
    return sensors, actuators


def kept_by_reset(
    env: object,
    before: tuple[Sequence[str], Sequence[str]],
    sensors: Sequence[SensorInformation],
    actuators: Sequence[ActuatorInformation],
) -> None:
    """Check that a reset declared every sensor and actuator uid of the start ``before`` it
    (its sensor and actuator uids): the agents read and set those (their run file names the
    first start's), so a reset may add some but not leave one out. One left out failed the run
    with a bare ``KeyError`` (a sensor), or dropped the agents' set points of it in silence,
    though their rows recorded them (an actuator)."""
    for kind, declared, infos in (
        ("sensor", before[0], sensors),
        ("actuator", before[1], actuators),
    ):
        now = {str(info.uid) for info in infos}
        missing = [uid for uid in declared if uid not in now]
        if missing:
            raise PluginContractError(
                env,
                "reset",
                f"did not return {kind} {_listed(missing)}, which the start before it declared "
                f"(agents use the {kind}s of the first start: a reset may add some, not leave "
                "one out)",
            )


def first_state(
    env: object, result: Any, declared: dict[str, Space | None], fix: Fix | None = None
) -> tuple[list[SensorInformation], list[RewardInformation], bool]:
    """Check the first ``update`` result after a start: every declared sensor reported once
    (or none at all in a last step, ``done``), in its declared space, rewards in theirs,
    ``done`` a bool."""
    parts = _parts(env, "update", result, 3, "(sensors, rewards, done)")
    sensors, rewards, done = list(parts[0]), list(parts[1]), parts[2]
    typed = [_typed(env, "update", "sensor", s, SensorInformation) for s in sensors]
    uids = _unique(env, "update", "sensor", typed)
    for i, sensor in enumerate(sensors):
        uid = str(sensor.uid)
        if uid not in declared:
            raise unknown_sensor(env, uid, list(declared))
        sensors[i] = _contained(env, "update", "sensor", sensor, declared[uid], fix)
    missing = [uid for uid in declared if uid not in uids]
    if missing and (sensors or done is not True):  # a last step may report no readings
        raise missing_sensors(env, missing)
    for i, reward in enumerate(rewards):
        _typed(env, "update", "reward", reward, RewardInformation)
        rewards[i] = _contained(env, "update", "reward", reward, reward.space, fix)
    return sensors, rewards, done_flag(env, done)


def done_flag(env: object, done: Any) -> bool:
    """``done`` of what ``update`` returned, as a plain bool.

    Raises:
        PluginContractError: ``done`` is not a bool (numpy's is one).
    """
    if not isinstance(done, bool | np.bool_):
        raise PluginContractError(env, "update", f"returned done = {show(done)}, expected a bool")
    return bool(done)


def outside(
    env: object, kind: str, info: Information, space: Space | None, method: str = "update"
) -> PluginContractError:
    """The error for a sensor value or reward that is not in its space."""
    return PluginContractError(
        env,
        method,
        f"returned {kind} '{info.uid}' = {show(info.value)}, which is not in its declared "
        f"space {space}",
    )


def unknown_sensor(env: object, uid: str, declared: Sequence[str]) -> PluginContractError:
    return PluginContractError(
        env,
        "update",
        f"returned sensor '{uid}', which its start did not declare (declared: "
        f"{_listed(declared)})",
    )


def missing_sensors(env: object, missing: Sequence[str]) -> PluginContractError:
    return PluginContractError(
        env, "update", f"did not return sensor {_listed(missing)}, which its start declared"
    )


def end_flag(env: object, name: str, value: Any, transformed: bool = False) -> bool | None:
    """An ``EnvironmentState``'s ``terminated`` or ``truncated`` (``name``) as a plain bool;
    None where the environment does not say. ``transformed``: the run file's state
    transformer returned the state.

    Raises:
        PluginContractError: ``value`` is neither a bool (numpy's too) nor None.
    """
    if value is None or value is True or value is False:  # (most: every step's)
        return value
    if not isinstance(value, bool | np.bool_):
        by = " (as the run file's state_transformer returned it)" if transformed else ""
        raise PluginContractError(
            env,
            "update",
            f"returned an EnvironmentState with {name} = {show(value)}{by}, expected a bool "
            "(or None: the environment does not say)",
        )
    return bool(value)


def state_parts(env: object, result: Any) -> tuple[Any, ...]:
    """``(sensors, rewards, done)`` of what ``update`` returned, unchecked otherwise."""
    return _parts(env, "update", result, 3, "(sensors, rewards, done)")[:3]


def _parts(env: object, method: str, result: Any, size: int, expected: str) -> tuple[Any, ...]:
    try:
        parts = tuple(result)
        for part in parts[: size - 1]:
            iter(part)
    except TypeError:
        parts = ()
    if len(parts) < size:
        raise PluginContractError(env, method, f"returned {show(result)}, expected {expected}")
    return parts


def _typed(env: object, method: str, kind: str, info: Any, cls: type[Information]) -> str:
    if not isinstance(info, cls):
        raise PluginContractError(
            env, method, f"returned {kind} {show(info)}, expected a {cls.__name__}"
        )
    space = info.space
    if space is not None and not isinstance(space, Space):
        raise PluginContractError(
            env,
            method,
            f"returned {kind} '{info.uid}' with space {show(space)}, expected a "
            "palaestra.types space",
        )
    return str(info.uid)


def _repeats_dropped(
    infos: list[Any], uids: list[str], repeated: list[str] | None
) -> tuple[list[Any], list[str]]:
    """``infos`` without those whose uid and space an earlier one has (the rest stay, and
    :func:`_unique` names a uid given again with another space)."""
    kept: list[Any] = []
    kept_uids: list[str] = []
    first: dict[str, Any] = {}
    for info, uid in zip(infos, uids, strict=True):
        if uid in first and first[uid].space == info.space:
            if repeated is not None:
                repeated.append(uid)
            continue
        first.setdefault(uid, info)
        kept.append(info)
        kept_uids.append(uid)
    return kept, kept_uids


def _unique(env: object, method: str, kind: str, uids: list[str]) -> set[str]:
    seen: set[str] = set()
    for uid in uids:
        if uid in seen:
            raise PluginContractError(env, method, f"returned {kind} '{uid}' twice")
        seen.add(uid)
    return seen


def _contained(
    env: object,
    method: str,
    kind: str,
    info: InfoT,
    space: Space | None,
    fix: Fix | None = None,
) -> InfoT:
    """``info`` if its value is in ``space``, else what ``fix`` makes of it; else raises."""
    if space is None or info.value is None or space.contains(info.value):
        return info  # None: a value not set, which palaestrAI passes unchecked too
    fixed: InfoT | None = fix(env, method, kind, info, space) if fix is not None else None
    if fixed is not None:
        return fixed
    raise outside(env, kind, info, space, method)


def show(value: Any) -> str:
    """A short description of a value: its repr (cut), with shape and dtype for arrays."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    if isinstance(value, np.ndarray):
        text = f"{text} (shape {value.shape}, dtype {value.dtype})"
    return text


def _listed(uids: Sequence[str]) -> str:
    shown = ", ".join(f"'{uid}'" for uid in uids[:10])
    return f"{shown} and {len(uids) - 10} more" if len(uids) > 10 else shown


# --- gymnasium environments: passive checks of what the wrapped environment returns --------


class GymnasiumStepError(RuntimeError):
    """A wrapped gymnasium environment raised in ``step``: the message names the
    environment, the episode, the step and the action; the environment's exception is the
    cause (its traceback is shown)."""

    def __init__(self, env: Any, action: Any, error: BaseException) -> None:
        super().__init__(
            f"{env.where}: step {env.step} of episode {env.episode} raised "
            f"{type(error).__name__}: {error} (action {show(action)})"
        )


def gym_value(env: Any, method: str, what: str, space: Any, value: Any) -> None:
    """Check one value a gymnasium environment returned against its gymnasium space, as
    gymnasium's ``PassiveEnvChecker`` does: NaN, shape and bounds, each named. A Box value of
    another dtype than its space's is converted (the store keeps the space's dtype) and, as in
    gymnasium, only warned about, once per environment (``env.dtype_warned``).

    Raises:
        PluginContractError: The value is not in the space; the message names the
            environment, the episode and step, the value and what is wrong with it.
    """
    problem = _gym_problem(space, value)
    if problem is None and not env.dtype_warned:
        env.dtype_warned = _warn_dtype(env, what, space, value)
    if problem is not None:
        raise _gym_error(
            env, method, f"{what} {show(value)}", f"{problem} (declared space {space!r})"
        )


def gym_step(env: Any, observation: Any, reward: Any, terminated: Any, truncated: Any) -> None:
    """Check what a gymnasium ``step`` returned: the observation in its space, a finite
    numeric reward, ``terminated`` and ``truncated`` bools."""
    gym_value(env, "update", "observation", env.env.observation_space, observation)
    gym_reward(env, "reward", reward)
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool | np.bool_):
            raise _gym_error(env, "update", f"{name} = {show(flag)}", "expected a bool")


def gym_reward(env: Any, what: str, reward: Any) -> None:
    """Check a reward a gymnasium or PettingZoo environment returned: a finite number."""
    if not isinstance(reward, int | float | np.integer | np.floating) or isinstance(reward, bool):
        raise _gym_error(env, "update", f"{what} {show(reward)}", "expected a number")
    if not np.isfinite(reward):
        raise _gym_error(env, "update", f"{what} {show(reward)}", "not finite")


def reward_value(env: Any, what: str, reward: Any) -> float:
    """A reward a gymnasium or PettingZoo environment returned, as a float; one that is no
    number (on a step the checks did not look at) fails as :func:`gym_reward` says."""
    try:
        return float(reward)
    except (TypeError, ValueError):
        gym_reward(env, what, reward)
        raise


def _gym_error(env: Any, method: str, returned: str, problem: str) -> PluginContractError:
    return PluginContractError(
        env, method, f"{env.where}: {_when(env)} returned {returned}, {problem}"
    )


def _when(env: Any) -> str:
    return (
        f"step {env.step} of episode {env.episode}"
        if env.step
        else f"reset of episode {env.episode}"
    )


def _gym_problem(space: Any, value: Any) -> str | None:
    """What is wrong with ``value`` as a value of gymnasium ``space``, or None."""
    from gymnasium import spaces as gs

    if isinstance(space, gs.Dict):
        if not isinstance(value, dict) or set(value) != set(space.spaces):
            return f"expected a dict with keys {sorted(space.spaces)}"
        return _first_problem((f"at key '{k}'", sub, value[k]) for k, sub in space.spaces.items())
    if isinstance(space, gs.Tuple):
        if not isinstance(value, tuple) or len(value) != len(space.spaces):
            return f"expected a tuple of {len(space.spaces)}"
        return _first_problem(
            (f"at index {i}", sub, value[i]) for i, sub in enumerate(space.spaces)
        )
    if isinstance(space, gs.Box):
        return _box_problem(space, value)
    return None if space.contains(value) else "which is not in its declared space"


def _first_problem(parts: Iterable[tuple[str, Any, Any]]) -> str | None:
    """The first problem of the parts (where, gymnasium space, value) of a Dict or Tuple."""
    for where, space, value in parts:
        problem = _gym_problem(space, value)
        if problem is not None:
            return f"{where}: {problem}"
    return None


def _warn_dtype(env: Any, what: str, space: Any, value: Any) -> bool:
    """Warn if a Box value's dtype is not its space's; returns whether it warned."""
    from gymnasium import spaces as gs

    if not isinstance(space, gs.Box):
        return False
    dtype = np.asarray(value).dtype
    if dtype == space.dtype:
        return False
    LOG.warning(
        "%s: %s returned %s of dtype %s, but its space's dtype is %s; palaestra converts it "
        "(warned once)",
        env.where,
        _when(env),
        what,
        dtype,
        space.dtype,
    )
    return True


def _box_problem(space: Any, value: Any) -> str | None:
    array = np.asarray(value)
    if array.dtype.kind == "f" and np.isnan(array).any():
        return "which holds NaN"
    if array.shape != space.shape:
        return f"of shape {array.shape}, expected {space.shape}"
    if array.dtype.kind not in "biuf":
        return f"of dtype {array.dtype}, expected numbers"
    if not (np.all(array >= space.low) and np.all(array <= space.high)):
        return "which is outside its declared bounds"
    return None
