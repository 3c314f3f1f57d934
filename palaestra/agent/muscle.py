"""The Muscle plug-in contract: the policy that acts for an agent inside one rollout worker."""

from __future__ import annotations

import io
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np

from palaestra.agent.context import BrainDumps, MuscleContext
from palaestra.agent.memory import Memory
from palaestra.agent.statistics import add_statistic, own_pop, pop_statistics
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode
from palaestra.core.plugin import PluginContractError


class Muscle(ABC):
    """Acts for one agent inside one rollout worker.

    Implement :meth:`propose_actions` (and :meth:`propose_actions_batch`, to act in several
    games at once in one call). Override :meth:`update` if your Brain sends updates.
    palaestra calls :meth:`setup` once in the worker process, after :attr:`context` is set and
    before the first step (in a test phase, :meth:`prepare_model` after it); :meth:`reset`
    before every episode but the first; :meth:`teardown` at the end. What
    :meth:`add_statistics` recorded is stored after every step.

    The constructor and :meth:`setup` run on the process's main thread; :meth:`propose_actions`,
    :meth:`update` and :meth:`reset` run in a worker thread, where Python allows no
    ``signal.signal`` (palaestra raises an error that says so): install signal handlers in the
    constructor or :meth:`setup`, if at all.

    With hot reload (``experiment-start --reload``), an instance of the edited class replaces
    this one between two steps, with the same context, after its :meth:`setup` (and
    :meth:`prepare_model` in a test phase) and the Brain's newest update through :meth:`update`
    (see :mod:`palaestra.agent.hot_reload`).
    """

    def attach(self, context: MuscleContext) -> None:
        """Give the muscle its context; called by palaestra before :meth:`setup`."""
        self.__dict__["_palaestra_context"] = context

    @property
    def context(self) -> MuscleContext:
        try:
            return self.__dict__["_palaestra_context"]  # type: ignore[no-any-return]
        except KeyError:
            raise RuntimeError("the muscle has no context yet: it is set before setup()") from None

    @property
    def name(self) -> str:
        return self.context.name

    @property
    def uid(self) -> str:
        """The agent's name; a Muscle another plug-in built (harl's PipelineMuscle builds its
        inner one) has the ``_uid`` that plug-in assigns, else its class name."""
        context = self.__dict__.get("_palaestra_context")
        if context is not None:
            return context.uid  # type: ignore[no-any-return]
        return str(self.__dict__.get("_uid", type(self).__name__))

    @property
    def mode(self) -> Mode:
        """The phase's mode, unless :attr:`_mode` was assigned (then that); a Muscle without a
        context and no assigned mode is in :attr:`Mode.TRAIN` (palaestrAI's default)."""
        own = self.__dict__.get("_palaestra_mode")
        if own is not None:
            return own  # type: ignore[no-any-return]
        context = self.__dict__.get("_palaestra_context")
        return context.mode if context is not None else Mode.TRAIN

    @property
    def _mode(self) -> Mode:  # palaestrAI's attribute behind ``mode``: harl's SACMuscle reads it
        return self.mode

    @_mode.setter
    def _mode(self, mode: Mode | str) -> None:
        """Set the mode this Muscle sees, as palaestrAI allows (its rollout worker assigns it;
        harl's PipelineMuscle assigns its inner Muscle's before each step). palaestra never
        assigns it: a phase's Muscles are in the phase's mode."""
        self.__dict__["_palaestra_mode"] = Mode(mode)

    @property
    def memory(self) -> Any:
        """A memory of the Muscle's own, as palaestrAI's ``Muscle.memory``: palaestra puts
        nothing in it (what the Objective and the Brain read is kept apart), so a Muscle may
        append to it and read it as it likes; a Muscle built by another plug-in is given one by
        assigning ``_memory``. A Muscle may assign ``memory`` too (its own replay buffer,
        say), as it could before palaestra gave it one."""
        memory = self.__dict__.get("_palaestra_memory")
        if memory is None:
            memory = self.__dict__["_palaestra_memory"] = Memory()
        return memory

    @memory.setter
    def memory(self, memory: Any) -> None:
        self.__dict__["_palaestra_memory"] = memory

    @property
    def _memory(self) -> Any:  # palaestrAI's attribute behind ``memory``
        return self.memory

    @_memory.setter
    def _memory(self, memory: Any) -> None:
        self.memory = memory

    @property
    def seed(self) -> int:
        return self.context.seed

    @property
    def rng(self) -> np.random.Generator:
        """A generator seeded with :attr:`seed`: use it for every random choice."""
        return self.context.rng

    def setup(self) -> None:
        """Prepare models; the default does nothing."""

    @abstractmethod
    def propose_actions(
        self,
        sensors: list[SensorInformation],
        actuators_available: list[ActuatorInformation],
    ) -> tuple[Sequence[ActuatorInformation], Any]:
        """Return the set points for this step, and what to send to the Brain."""

    def propose_actions_batch(
        self,
        sensors: list[list[SensorInformation]],
        actuators_available: list[list[ActuatorInformation]],
    ) -> tuple[list[Sequence[ActuatorInformation]], list[Any]]:
        """Act in several games at once: item ``k`` of each list belongs to one game.

        With ``phase_config.envs_per_worker`` N > 1, palaestra calls this once per step round
        with the observations of the worker's games that go on (at most N; a game whose
        episode ended is not asked). Return the set points and the ``data_for_brain`` of each
        game, in the same order. The default calls :meth:`propose_actions` for each game in
        turn; override it to act on all of them in one batch (one forward pass of a model).

        A Muscle that does not override it is called as with one game per worker: palaestra
        calls :meth:`propose_actions` once per game and stores what each call added with
        ``add_statistics`` (or recorded with ``context.record``) as that game's step. An
        overriding Muscle's statistics and records of a round are stored once, under the
        round's first game.
        """
        setpoints: list[Sequence[ActuatorInformation]] = []
        data: list[Any] = []
        propose = self.propose_actions
        for game_sensors, game_actuators in zip(sensors, actuators_available, strict=True):
            game_setpoints, game_data = proposal(self, propose(game_sensors, game_actuators))
            setpoints.append(game_setpoints)
            data.append(game_data)
        return setpoints, data

    def propose_actions_columns(
        self, sensors: Mapping[str, Any], actuators: Sequence[ActuatorInformation], games: int
    ) -> tuple[Mapping[str, Any], Sequence[Any] | None]:
        """Act in the ``games`` games of a round at once, a column per sensor and actuator.

        ``sensors`` holds each sensor's values in those games, by uid: a numpy array of shape
        ``(games, *shape)`` and the space's dtype for a box-like space, else a list with each
        game's value as its space's ``from_json_value`` reads it. ``actuators`` are the agent's
        actuators (their uid and space; no value). Return each actuator's column by uid (an
        array of shape ``(games, *shape)``, or a sequence of ``games`` values; an actuator
        left out is not set in any game) and the ``data_for_brain`` of each game (a sequence
        of ``games``), or None for None in every game.

        palaestra calls it in place of :meth:`propose_actions_batch` where the class overrides
        it and the agent has no filters: no information object is made for the games that
        act, and the set points are checked a column at a time. The Muscle's memory rows
        make their sensor and set point objects when first read. Statistics and records are
        stored as :meth:`propose_actions_batch`'s. Not overridden, it is never called.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not act on columns: override propose_actions_columns"
        )

    def update(self, update: Any) -> None:
        """Apply an update from the Brain; the default ignores it."""

    def reset(self) -> None:
        """A new episode begins; the default does nothing."""

    def teardown(self) -> None:
        """Release resources; the default does nothing."""

    def prepare_model(self) -> None:
        """Load the trained model to act with in a test phase; the default does nothing.

        Called in test phases only, after :meth:`setup` and before the first step (so that a
        Muscle that builds its model in :meth:`setup` can load into it; palaestrAI 3.5.18
        never calls it): load the Brain's dumps with :meth:`load` (``load:`` in the run file,
        or the previous phase, says whose), so that the first step already acts with the
        trained policy.
        """

    def load(self, tag: str | None = "") -> BinaryIO | None:
        """The agent's brain dump with ``tag`` (the newest of the phase it loads from),
        positioned at its start, or None if there is none (a warning says which tags there
        are)."""
        data = self._model_loaders.load(tag)
        return None if data is None else io.BytesIO(data)

    @property
    def _model_loaders(self) -> BrainDumps:  # palaestrAI spelling, for ported muscles
        """The agent's dumps; a Muscle without a context has what was assigned to it
        (palaestrAI's plug-ins may hand theirs on), else none to load."""
        context = self.__dict__.get("_palaestra_context")
        if context is not None:
            return context.dumps  # type: ignore[no-any-return]
        own = self.__dict__.get("_palaestra_loaders")
        if own is not None:
            return own  # type: ignore[no-any-return]
        return BrainDumps(
            owner=f"{type(self).__name__} '{self.uid}'",
            nowhere="a Muscle built by another plug-in has the agent's dumps only if that "
            "plug-in assigns its _model_loaders",
        )

    @_model_loaders.setter
    def _model_loaders(self, loaders: BrainDumps) -> None:
        self.__dict__["_palaestra_loaders"] = loaders

    def add_statistics(self, key: str, value: Any, allow_overwrite: bool = False) -> None:
        """Record ``value`` under ``key`` for this step (palaestrAI's API); palaestra pops the
        statistics after every step and stores them in the store's ``statistics`` table.

        Raises:
            StatisticsError: ``key`` is not a string, or is taken (see
                :meth:`palaestra.agent.Brain.add_statistics`).
        """
        add_statistic(self, key, value, allow_overwrite)

    @own_pop
    def pop_statistics(self) -> dict[str, Any]:
        """The statistics added since the last call, which starts a new, empty set."""
        return pop_statistics(self)


PROPOSAL = (
    "expected the set points (the actuators it was given, each set: a list of "
    "ActuatorInformation), or a pair (that list, the data for the Brain)"
)


def proposal(muscle: object, result: Any) -> tuple[Sequence[ActuatorInformation], Any]:
    """What ``propose_actions`` returned, as (set points, data for the Brain): a pair, or, as
    palaestrAI takes it, the set points alone (then the Brain gets None).

    Raises:
        PluginContractError: Neither, naming the Muscle, what it returned and the contract.
    """
    if isinstance(result, tuple) and len(result) != 2:
        raise PluginContractError(
            muscle,
            "propose_actions",
            f"returned a tuple of {len(result)} items {reprlib.repr(result)}: {PROPOSAL}",
        )
    setpoints, data = result if isinstance(result, tuple) else (result, None)
    if not isinstance(setpoints, list | tuple):
        raise PluginContractError(
            muscle,
            "propose_actions",
            f"returned {type(setpoints).__name__} {reprlib.repr(setpoints)} as its set points: "
            f"{PROPOSAL}",
        )
    return setpoints, data
