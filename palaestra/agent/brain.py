"""The Brain plug-in contract: the learner that turns Muscle experience into updates."""

from __future__ import annotations

import dataclasses
import io
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, BinaryIO

from palaestra.agent.context import BrainContext, BrainDumps
from palaestra.agent.evaluation_result import EvaluationResult
from palaestra.agent.memory import Memory
from palaestra.agent.statistics import add_statistic, own_pop, pop_statistics
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode


class Brain(ABC):
    """Learns for one agent, in its own process.

    Implement :meth:`thinking`. Override :meth:`setup` to build models (``sensors``,
    ``actuators`` and ``seed`` are known by then), and :meth:`store` / :meth:`load` to save and
    restore your state with :meth:`store_brain_dump` / :meth:`load_brain_dump`.

    palaestra calls, in the Brain's process: :meth:`attach` (framework only), :meth:`load`
    (only if there are dumps to start from), :meth:`setup`, :meth:`pretrain` (only in a train
    phase of an agent with ``replay``, its memory holding the recorded steps; it then starts
    the phase with an empty memory), then :meth:`thinking` for every
    Muscle message (after appending its transition to :attr:`memory`), :meth:`store` at the end
    of every episode, :meth:`evaluate_rollouts` after each evaluation rollout of a phase with
    ``evaluate_every``, and :meth:`teardown`. What :meth:`add_statistics` recorded is stored after
    every :meth:`thinking` call.

    The constructor and :meth:`setup` run on the process's main thread; :meth:`thinking` and
    the methods called while steps run (:meth:`store`) run in a worker thread, where Python
    allows no ``signal.signal`` (palaestra raises an error that says so): install signal
    handlers in the constructor or :meth:`setup`, if at all.

    With hot reload (``experiment-start --reload``), an instance of the edited class replaces
    this one between two :meth:`thinking` calls: this one's :meth:`store` hands its state to
    the new one's :meth:`load` (see :mod:`palaestra.agent.hot_reload`).
    """

    def attach(self, context: BrainContext) -> None:
        """Give the brain its context; called by palaestra before :meth:`setup`."""
        self.__dict__["_palaestra_context"] = context

    @property
    def context(self) -> BrainContext:
        try:
            return self.__dict__["_palaestra_context"]  # type: ignore[no-any-return]
        except KeyError:
            raise RuntimeError("the brain has no context yet: it is set before setup()") from None

    def _given(self, field: str, private: str) -> Any:
        """``field`` of the context; for a Brain without one (a Brain another plug-in built,
        as harl's PipelineBrain builds its inner one), the palaestrAI attribute ``private``
        that plug-in assigned (``_seed``, ``_sensors``, ``_actuators``, ``_dumpers``)."""
        context = self.__dict__.get("_palaestra_context")
        if context is not None:
            return getattr(context, field)
        if private in self.__dict__:
            return self.__dict__[private]
        return self.context  # raises: no context yet

    @property
    def memory(self) -> Memory:
        """The transitions the Muscles reported, newest last."""
        return self.__dict__.setdefault("_palaestra_memory", Memory())  # type: ignore[no-any-return]

    @property
    def _memory(self) -> Memory:  # palaestrAI's attribute: PipelineBrain hands its memory on
        return self.memory

    @_memory.setter
    def _memory(self, memory: Memory) -> None:
        self.__dict__["_palaestra_memory"] = memory

    @property
    def name(self) -> str:
        context = self.__dict__.get("_palaestra_context")
        return context.name if context is not None else str(self.__dict__.get("_name", ""))

    @property
    def seed(self) -> int:
        return int(self._given("seed", "_seed"))

    @property
    def mode(self) -> Mode:
        """The phase's mode; a Brain another plug-in built has the mode that plug-in assigns
        (palaestrAI's ``brain.mode = ...``), else :attr:`Mode.TRAIN` (palaestrAI's default)."""
        own = self.__dict__.get("_palaestra_mode")
        if own is not None:
            return own  # type: ignore[no-any-return]
        context = self.__dict__.get("_palaestra_context")
        return context.mode if context is not None else Mode.TRAIN

    @mode.setter
    def mode(self, mode: Mode | str) -> None:
        """Set the mode this Brain sees (palaestrAI allows it; harl's PipelineBrain sets its
        inner Brain's); palaestra itself never does."""
        self.__dict__["_palaestra_mode"] = Mode(mode)

    @property
    def sensors(self) -> Sequence[SensorInformation]:
        return self._given("sensors", "_sensors")  # type: ignore[no-any-return]

    @sensors.setter
    def sensors(self, sensors: Sequence[SensorInformation]) -> None:
        """What the Brain sees (an agent's filters set it before :meth:`setup`)."""
        self.attach(dataclasses.replace(self.context, sensors=list(sensors)))

    @property
    def actuators(self) -> Sequence[ActuatorInformation]:
        return self._given("actuators", "_actuators")  # type: ignore[no-any-return]

    @actuators.setter
    def actuators(self, actuators: Sequence[ActuatorInformation]) -> None:
        self.attach(dataclasses.replace(self.context, actuators=list(actuators)))

    @property
    def dumpers(self) -> BrainDumps:
        return self._given("dumps", "_palaestra_dumpers")  # type: ignore[no-any-return]

    @property
    def _dumpers(self) -> BrainDumps:  # palaestrAI spelling, for ported brains
        return self.dumpers

    @_dumpers.setter
    def _dumpers(self, dumpers: BrainDumps) -> None:
        """palaestrAI's plug-ins hand their dumpers to a Brain they built (PipelineBrain);
        a Brain with a context keeps palaestra's."""
        self.__dict__["_palaestra_dumpers"] = dumpers

    def setup(self) -> None:
        """Prepare models; the default does nothing."""

    def pretrain(self) -> None:
        """Learn offline from recorded steps before the phase begins (palaestrAI's hook).

        Called after :meth:`setup`, in a train phase of an agent whose run file names
        recorded runs under ``replay``: :attr:`memory` then holds their steps (each recorded
        episode under a muscle uid of its own, ``pretrainer:...``), and is emptied again after
        this call. The default does nothing.
        """

    @abstractmethod
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        """Digest what Muscle ``muscle_id`` sent; return an update for it (or None)."""

    def thinking_batch(self, experiences: Sequence[tuple[str, Any]]) -> Sequence[Any]:
        """Digest the messages several Muscles sent at once; one update (or None) for each.

        ``experiences`` are ``(muscle_id, data_from_muscle)`` pairs, in the order they were
        taken, their transitions already appended to :attr:`memory`. palaestra calls it only
        for a Brain that overrides it, of an agent without filters: for the messages of more
        than one Muscle pending, or for a round of a Muscle that plays several games
        (``envs_per_worker``: one experience per game, in lane order); what
        :meth:`add_statistics` recorded during the call is stored at the step of the batch's
        last message. Override it to think about them together (one forward pass of a network
        for all the Muscles waiting); the default calls :meth:`thinking` for each, in order.
        """
        return [self.thinking(muscle_id, data) for muscle_id, data in experiences]

    def store(self) -> None:
        """Save the brain's state with :meth:`store_brain_dump`; the default saves nothing."""

    def load(self) -> None:
        """Restore state from :meth:`load_brain_dump`; the default does nothing."""

    def try_load_brain_dump(self) -> None:
        """palaestrAI's entry to loading: :meth:`load` if there are dumps to start from.

        palaestra calls :meth:`load` itself, only when there are dumps; a Brain that overrides
        this method instead (harl's PipelineBrain hands the dumpers to the Brains it built
        here) has it called at the start of every phase, before :meth:`setup`, as palaestrAI
        does, and decides itself.
        """
        if self.dumpers.tags():
            self.load()

    def teardown(self) -> None:
        """Release resources; the default does nothing."""

    def evaluate_rollouts(
        self,
        experiment_run_uid: str,
        experiment_run_instance_uid: str,
        experiment_run_phase: int,
        agent_name: str,
        episode: int,
    ) -> EvaluationResult | None:
        """Judge the policy after the rollouts of evaluation ``episode`` (0, 1, ...) of the
        phase (``evaluate_every``); the default returns None (no result).

        Return an :class:`~palaestra.agent.evaluation_result.EvaluationResult` for the run's
        ``AgentEvaluationObjectiveTerminationCondition`` to read. Called in the Brain's
        process with palaestrAI's arguments, after the evaluation episodes (test mode, not
        learned from) ended.
        """
        return None

    def store_brain_dump(self, data: bytes | BinaryIO, tag: str | None = "") -> None:
        """Persist ``data`` as this brain's dump with ``tag`` (in the store and under the data
        path). A stream is stored whole, from its start, wherever it is positioned (palaestrAI's
        rule); each tag is kept apart, and the next phase loads the newest of each."""
        self.dumpers.store(data, tag)

    def load_brain_dump(self, tag: str | None = "") -> BinaryIO | None:
        """The dump with ``tag`` this brain should start from (positioned at its start), or
        None if there is none (a warning says which tags there are)."""
        data = self.dumpers.load(tag)
        return None if data is None else io.BytesIO(data)

    def add_statistics(self, key: str, value: Any, allow_overwrite: bool = False) -> None:
        """Record ``value`` under ``key`` for this step or update (palaestrAI's API).

        palaestra pops the statistics after every :meth:`thinking` call and stores them in the
        store's ``statistics`` table, with the worker, episode and step of the Muscle that
        asked. A key added twice before they are popped is an error unless
        ``allow_overwrite`` is given.

        Raises:
            StatisticsError: ``key`` is not a string, or is taken (an ``AssertionError`` too,
                as palaestrAI's).
        """
        add_statistic(self, key, value, allow_overwrite)

    @own_pop
    def pop_statistics(self) -> dict[str, Any]:
        """The statistics added since the last call, which starts a new, empty set."""
        return pop_statistics(self)
