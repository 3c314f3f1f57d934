"""GymnasiumEnvironment: any gymnasium environment as a palaestra environment (its run file:
``docs/gymnasium-pettingzoo.md``).

Sensors and actuators (see :mod:`palaestra.environment.spaces_map`): the observation is the
sensor ``obs`` (a Dict or Tuple observation splits into ``obs.<key>`` / ``obs.<index>``), the
action the actuator ``action`` (``action.<key>`` / ``action.<index>``), the reward the reward
``reward``; agents name them with the environment's uid in front (``lake.obs``). gymnasium's
``terminated`` and ``truncated`` are reported apart (:class:`EnvironmentState`). The first
reset of the process passes palaestra's seed for the environment (``reset(seed=...)``); later
resets continue gymnasium's own generator, so a run is repeatable from its seed.

Needs the ``gym`` extra (``pip install 'palaestra[gym]'``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from palaestra.core.description.extras import require
from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box
from palaestra.environment import checks, params
from palaestra.environment.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.environment.frames import FrameRecorder, default_frames_dir, recorder_of
from palaestra.environment.spaces_map import Leaf, informed, join, leaves, split

REWARD_SPACE = Box(-np.inf, np.inf, shape=(), dtype=np.float64)
"""The space of the reward ``reward``: any finite or infinite float (NaN is refused)."""

CHECKS = ("first", "every_step", "off")


class GymnasiumEnvironment(Environment):
    """A gymnasium environment, made from a registered id or a factory.

    Args:
        uid: The environment's uid in the run file.
        broker_uri: Unused (palaestrAI's argument).
        seed: The seed when palaestra gives none.
        env_id: A registered gymnasium id (``CartPole-v1``); or give ``factory``.
        env_kwargs: Keyword arguments for ``gymnasium.make`` or the factory.
        factory: ``module:callable`` returning a ``gymnasium.Env``.
        check: ``first`` checks the first reset and step of every episode against the
            declared spaces (shapes, bounds, NaN; another dtype is warned about once);
            ``every_step`` checks every step; ``off`` checks nothing here (palaestra still
            checks the first step after each start).
        record_frames: ``{every: N, dir: PATH}`` records ``render_mode="rgb_array"`` frames
            of every N-th episode (see :mod:`palaestra.environment.frames`).

    Raises:
        InvalidInputError: An unknown id (with the nearest registered ids), a factory that
            cannot be loaded, a wrong param, or a space palaestra cannot map (exit code 2).
    """

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        factory: str | None = None,
        check: str = "first",
        record_frames: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        require("gymnasium", "the environment GymnasiumEnvironment")
        self.env_id = env_id
        self.where = f"environment '{uid or ''}' ({env_id or factory})"
        self.check = params.choice(self.where, "check", check, CHECKS)
        self._record_setting = record_frames
        if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
            raise InvalidInputError(
                f"{self.where}: params.env_kwargs: expected a mapping of keyword arguments, "
                f"got {env_kwargs!r}"
            )
        kwargs = dict(env_kwargs or {})
        if record_frames is not None:  # {} too: every episode
            kwargs.setdefault("render_mode", "rgb_array")
        self.env: Any = make(env_id, factory, kwargs, self.where)
        self.obs_leaves: list[Leaf] = leaves(self.env.observation_space, "obs", self.where)
        self.action_leaves: list[Leaf] = leaves(self.env.action_space, "action", self.where)
        self.recorder: FrameRecorder | None = None
        self.seeded = False
        self.dtype_warned = False
        self.episode = -1
        self.step = 0

    def start_environment(self) -> EnvironmentBaseline:
        """Reset the gymnasium environment (with the seed the first time); the sensors hold
        the first observation, the actuators their default set point (which an actuator no
        agent sets keeps: see :func:`~palaestra.environment.spaces_map.default_value`)."""
        if not self.seeded:
            self.seeded = True
            observation, _info = self.env.reset(seed=int(self.seed))
            self._start_recorder()
        else:
            observation, _info = self.env.reset()
        self.episode += 1
        self.step = 0
        if self.check != "off":
            checks.gym_value(self, "reset", "observation", self.env.observation_space, observation)
        if self.recorder is not None:
            self.recorder.begin()
        return EnvironmentBaseline(
            self._sensors(observation), informed(ActuatorInformation, self.action_leaves)
        )

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        """Step with the actuators' set points; report observation, reward and the end."""
        given = {str(a.uid): a.value for a in actuators}
        action = join(given, self.action_leaves)
        self.step += 1
        try:
            observation, reward, terminated, truncated, _info = self.env.step(action)
        except Exception as exc:
            raise checks.GymnasiumStepError(self, action, exc) from exc
        if self.check == "every_step" or (self.check == "first" and self.step == 1):
            checks.gym_step(self, observation, reward, terminated, truncated)
        if self.recorder is not None:
            self.recorder.grab()
        terminated, truncated = bool(terminated), bool(truncated) and not terminated
        done = terminated or truncated
        if done and self.recorder is not None:
            self.recorder.end()
        return EnvironmentState(
            self._sensors(observation),
            [
                RewardInformation(
                    checks.reward_value(self, "reward", reward), REWARD_SPACE, "reward"
                )
            ],
            done,
            terminated=terminated,
            truncated=truncated,
        )

    def shutdown(self) -> bool:
        if self.recorder is not None:
            self.recorder.end()
        self.env.close()
        return True

    def _sensors(self, observation: Any) -> list[SensorInformation]:
        return informed(SensorInformation, self.obs_leaves, split(observation, self.obs_leaves))

    def _start_recorder(self) -> None:
        """Record frames if asked to, in a run only (not while palaestra probes the ids)."""
        context = self.context
        if context is None:
            return
        worker = context.worker
        self.recorder = recorder_of(
            self._record_setting,
            self.where,
            lambda: default_frames_dir(self.uid, worker, int(self.seed), context.data_path),
            self.env.render,
        )


def make(env_id: str | None, factory: str | None, kwargs: dict[str, Any], where: str) -> Any:
    """The gymnasium environment of ``env_id`` or ``factory`` (exactly one given).

    Raises:
        InvalidInputError: Neither or both given, an unknown id, or a factory that cannot be
            loaded or does not return an environment.
    """
    gym = require("gymnasium", "the environment GymnasiumEnvironment")
    if (env_id is None) == (factory is None):
        raise InvalidInputError(
            f"{where}: params: give exactly one of env_id (a registered gymnasium id) and "
            "factory ('module:callable')"
        )
    if env_id is not None:
        if isinstance(env_id, str) and ":" in env_id:  # gymnasium's module:id registers it
            module_name, _, registered = env_id.partition(":")
            imported(module_name, where, "params.env_id: ")
        else:
            registered = env_id
        if not isinstance(registered, str) or registered not in gym.registry:
            raise unknown_id(env_id, list(gym.registry), where)
        try:
            return gym.make(env_id, **kwargs)
        except (TypeError, gym.error.Error) as exc:  # a wrong keyword, a missing dependency
            raise InvalidInputError(
                f"{where}: gymnasium.make({env_id!r}, **params.env_kwargs) refused: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    env = call_made(load_factory(str(factory), where), kwargs, where, f"{factory}")
    if not isinstance(env, gym.Env):
        raise InvalidInputError(
            f"{where}: params.factory '{factory}' returned {type(env).__name__}, expected a "
            "gymnasium.Env"
        )
    return env


def call_made(make: Any, kwargs: dict[str, Any], where: str, name: str) -> Any:
    """``make(**kwargs)``; a TypeError (a keyword it does not take, as ``gymnasium.make``
    reports it) is the run file's ``env_kwargs`` refused (exit code 2), as for an ``env_id``."""
    try:
        return make(**kwargs)
    except TypeError as exc:
        raise InvalidInputError(
            f"{where}: {name}(**params.env_kwargs) refused: {type(exc).__name__}: {exc}"
        ) from exc


def unknown_id(env_id: Any, known: list[str], where: str) -> InvalidInputError:
    """The error for an id gymnasium does not know, with the nearest registered ids."""
    near = difflib.get_close_matches(str(env_id), known, n=3, cutoff=0.5)
    hint = f"; nearest registered ids: {', '.join(near)}" if near else ""
    return InvalidInputError(f"{where}: params.env_id: no gymnasium id {env_id!r}{hint}")


def load_factory(name: str, where: str) -> Any:
    """The callable the param ``factory`` (``module:callable``) names."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise InvalidInputError(
            f"{where}: params.factory: expected 'module:callable', got {name!r}"
        )
    return load_callable(module_name, attr, where, "params.factory: ")


def imported(module_name: str, where: str, key: str = "") -> Any:
    """The module ``module_name``, imported (``key``: the param the errors name)."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidInputError(
            f"{where}: {key}cannot import module '{module_name}': {exc}"
        ) from exc


def load_callable(module_name: str, attr: str, where: str, key: str = "") -> Any:
    """The callable ``attr`` of module ``module_name`` (``key``: the param the errors name)."""
    function = getattr(imported(module_name, where, key), attr, None)
    if not callable(function):
        raise InvalidInputError(f"{where}: {key}module '{module_name}' has no callable '{attr}'")
    return function
