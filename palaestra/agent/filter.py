"""Agent filters: the Filter plug-in contract and the chain that applies an agent's filters.

An agent's ``filters:`` (a list of ``{name, params}``) stand between the world and the
agent, as in palaestrAI: each Muscle process and the Brain process build their own instances
(filters share no state). In the Muscle process, before ``propose_actions`` every filter's
:meth:`Filter.muscle_pre_process` rewrites the sensors and available actuators, in the order
given; after it, :meth:`Filter.muscle_post_process` rewrites the set points and the data for
the Brain, in reverse order. In the Brain process :meth:`Filter.brain_pre_process` rewrites
what a Muscle sent before ``thinking`` and :meth:`Filter.brain_post_process` its answer.
"""

from __future__ import annotations

import copy
import reprlib
from abc import ABC
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from palaestra.agent.muscle import proposal
from palaestra.core.description.loading import load_class
from palaestra.core.description.specs import ClassSpec
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.plugin import PluginContractError, call
from palaestra.core.space_checks import Check, value_check
from palaestra.core.spaces import Space

if TYPE_CHECKING:
    from palaestra.agent.brain import Brain
    from palaestra.agent.muscle import Muscle

__all__ = ["Filter", "FilterChain"]


class Filter(ABC):  # noqa: B024 - palaestrAI's base: every hook has a default
    """Transforms what an agent observes and does, and can transform it back.

    Override any of the hooks; each default passes its input through. :attr:`brain` (in the
    Brain process) or :attr:`muscle` (in a Muscle process) is set before :meth:`setup`, which
    calls :meth:`setup_brain` or :meth:`setup_muscle`; both run before the Brain's or the
    Muscle's own ``setup()``.
    """

    brain: Brain | None = None
    muscle: Muscle | None = None
    """(Also on the class: a filter whose constructor does not call ``super().__init__()``
    works, as a Brain or a Muscle does.)"""

    def __init__(self) -> None:
        self.brain: Brain | None = None
        self.muscle: Muscle | None = None

    def setup(self) -> None:
        if self.brain is not None:
            self.setup_brain()
        if self.muscle is not None:
            self.setup_muscle()

    def setup_brain(self) -> None:
        """Prepare for the Brain (it may set ``self.brain.sensors``); the default does nothing."""

    def setup_muscle(self) -> None:
        """Prepare for the Muscle; the default does nothing."""

    def muscle_pre_process(
        self, sensors: list[SensorInformation], actuators_available: list[ActuatorInformation]
    ) -> tuple[list[SensorInformation], list[ActuatorInformation]]:
        """What the Muscle gets to see and may set."""
        return sensors, actuators_available

    def muscle_post_process(
        self, setpoints: list[ActuatorInformation], data_for_brain: Any
    ) -> tuple[list[ActuatorInformation], Any]:
        """The set points the environment gets, and what goes to the Brain."""
        return setpoints, data_for_brain

    def brain_pre_process(self, muscle_id: str, data_from_muscle: Any) -> tuple[str, Any]:
        """What ``thinking`` gets from a Muscle."""
        return muscle_id, data_from_muscle

    def brain_post_process(self, potential_update: Any) -> Any:
        """The update the Muscle gets (None for none)."""
        return potential_update


class FilterChain:
    """An agent's filters in one process, applied in order (and back in reverse).

    What each filter's ``muscle_pre_process`` returns is checked, naming the filter: every
    sensor value in the space of its sensor (by a fast check made once per filter and uid),
    and, for a filter that cannot have told the Brain (it overrides neither ``setup_brain``
    nor ``setup``), the sensors it was given, by uid and in order: the Brain's memory reads
    the values the Muscle saw as the sensors the Brain was told of.
    """

    def __init__(self, specs: Sequence[ClassSpec]) -> None:
        self.filters: list[Any] = [call(load_class(s.name), **s.params) for s in specs]
        self.checks: list[dict[str, Check]] = []  # per filter: its sensors' space checks
        self.silent: list[bool] = []  # per filter: it cannot have told the Brain

    def __bool__(self) -> bool:
        return bool(self.filters)

    def set_up(self, *, brain: Brain | None = None, muscle: Muscle | None = None) -> None:
        for agent_filter in self.filters:
            if brain is not None:
                agent_filter.brain = brain
            if muscle is not None:
                agent_filter.muscle = muscle
            call(agent_filter.setup)

    def act(
        self,
        propose: Callable[..., Any],
        sensors: list[SensorInformation],
        available: list[ActuatorInformation],
    ) -> tuple[list[SensorInformation], Sequence[ActuatorInformation], Any]:
        """``propose(sensors, available)`` between the filters (on copies of ``sensors``,
        which stay what the world reported); returns the sensors the Muscle saw (what the
        Brain's memory gets, as in palaestrAI), the set points and the data for the Brain."""
        seen: list[Any] = copy.deepcopy(sensors)
        if len(self.checks) != len(self.filters):  # (once: the filters are known now)
            self.checks = [{} for _ in self.filters]
            self.silent = [not _tells_the_brain(type(f)) for f in self.filters]
        for agent_filter, checks, silent in zip(
            self.filters, self.checks, self.silent, strict=True
        ):
            given = [s.uid for s in seen] if silent else None
            kept = [(s.value, s.space) for s in seen]  # (alive: their ids stay theirs)
            found = call(agent_filter.muscle_pre_process, seen, available)
            seen, available = _pair(agent_filter, "muscle_pre_process", found, _PRE)
            _check_seen(agent_filter, checks, seen, {(id(v), id(s)) for v, s in kept})
            if given is not None and [getattr(s, "uid", None) for s in seen] != given:
                raise _renamed(agent_filter, given, seen)
        setpoints, data = proposal(
            getattr(propose, "__self__", propose), call(propose, seen, available)
        )
        for agent_filter in reversed(self.filters):
            found = call(agent_filter.muscle_post_process, setpoints, data)
            setpoints, data = _pair(agent_filter, "muscle_post_process", found, _POST)
        return seen, setpoints, data

    def think(self, thinking: Callable[[str, Any], Any], muscle_id: str, data: Any) -> Any:
        """``thinking(muscle_id, data)`` between the filters."""
        for agent_filter in self.filters:
            found = call(agent_filter.brain_pre_process, muscle_id, data)
            muscle_id, data = _pair(agent_filter, "brain_pre_process", found, _BRAIN_PRE)
        update = call(thinking, muscle_id, data)
        for agent_filter in reversed(self.filters):
            update = call(agent_filter.brain_post_process, update)
        return update


_PRE = ((list, tuple), "(sensors, actuators_available): the lists the Muscle gets")
_POST = (
    (list, tuple),
    "(setpoints, data_for_brain): the set points the environment gets, and the Brain's data",
)
_BRAIN_PRE = ((str,), "(muscle_id, data_from_muscle): what thinking gets")
"""What each of a filter's hooks that return a pair returns: the types of its first item, and
what it is (in errors)."""


def _pair(
    agent_filter: Any, method: str, found: Any, expected: tuple[tuple[type, ...], str]
) -> tuple[Any, Any]:
    """What a filter's hook returned, checked to be its pair (a tuple or list of two items,
    the first of the ``expected`` types: a list of sensors or set points, or the Muscle's
    id)."""
    if isinstance(found, tuple | list) and len(found) == 2 and isinstance(found[0], expected[0]):
        return found[0], found[1]
    raise PluginContractError(
        agent_filter,
        method,
        f"returned {type(found).__name__} {reprlib.repr(found)}: expected a pair {expected[1]}",
    )


def _tells_the_brain(cls: type[Filter]) -> bool:
    """Whether a filter of ``cls`` may tell the Brain of the sensors it makes: it overrides
    ``setup_brain`` (or ``setup``, which calls it), where it sets ``self.brain.sensors``."""
    hooks = (getattr(cls, "setup_brain", None), getattr(cls, "setup", None))
    return hooks != (Filter.setup_brain, Filter.setup)


def _check_seen(
    agent_filter: Any, checks: dict[str, Check], seen: list[Any], passed: set[tuple[int, int]]
) -> None:
    """Each of the sensors ``agent_filter``'s ``muscle_pre_process`` returned is a
    SensorInformation whose value is in its space (``checks``: the filter's fast check of
    each uid's space, made at its first sight, made again before a value is refused); a value
    it passed on with its space as it was given them (``passed``: their ids) is not checked
    again, so a filter that leaves the values alone costs next to nothing.

    Raises:
        PluginContractError: One is not, naming the filter, the sensor and its value.
    """
    for info in seen:
        try:
            uid, value = info.uid, info.value
        except AttributeError:
            raise PluginContractError(
                agent_filter,
                "muscle_pre_process",
                f"returned sensor {reprlib.repr(info)}, expected a SensorInformation",
            ) from None
        if (id(value), id(info.space)) in passed:
            continue
        check = checks.get(uid)
        if check is None or not check(value):
            space = info.space
            if space is not None and not isinstance(space, Space):
                raise PluginContractError(
                    agent_filter,
                    "muscle_pre_process",
                    f"returned sensor '{uid}' with space {reprlib.repr(space)}, expected a "
                    "palaestra.types space",
                )
            check = checks[uid] = value_check(space)  # (its space now: may be another)
            if not check(value):
                raise PluginContractError(
                    agent_filter,
                    "muscle_pre_process",
                    f"returned sensor '{uid}' = {reprlib.repr(value)}, which is not in its space "
                    f"{info.space}: the Muscle and the Brain's memory get it",
                )


def _renamed(agent_filter: Any, given: list[Any], seen: list[Any]) -> PluginContractError:
    """The error for a filter that changed the sensors but cannot have told the Brain."""
    made = ", ".join(repr(str(getattr(s, "uid", s))) for s in seen)
    return PluginContractError(
        agent_filter,
        "muscle_pre_process",
        f"returned the sensors {made} for {', '.join(repr(str(u)) for u in given)} it was "
        "given, but does not tell the Brain: the Brain's memory reads the values the Muscle "
        "saw as the sensors the Brain was told of. A filter that changes the sensors sets "
        "self.brain.sensors to match in setup_brain()",
    )
