"""Brain and Muscle statistics: palaestrAI's ``add_statistics`` / ``pop_statistics``, and
their values made plain for the store.

A plug-in adds named values during a step (``thinking``, ``propose_actions``, ``update``);
palaestra pops them once per step and sends them to the store's ``statistics`` table. The
values live in the plug-in's ``_statistics`` dict, the attribute palaestrAI's base classes
use, so code written for palaestrAI that reads it keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from palaestra.core.plugin import PluginError, call
from palaestra.core.plugin_records import as_builtin
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import RowSink

ATTRIBUTE = "_statistics"
INT64 = (-(1 << 63), (1 << 63) - 1)
ENDED = "_palaestra_statistics_ended"
"""Set on a plug-in by :func:`end_statistics`: what to tell it when it adds one after."""
OWN_POP = "_pops_its_statistics"
"""Marks the base classes' ``pop_statistics`` (:func:`own_pop`)."""

F = TypeVar("F", bound=Callable[..., Any])


def own_pop(method: F) -> F:
    """Mark a base class's ``pop_statistics`` that pops the set ``add_statistics`` fills (as
    :func:`pop_statistics`): where a plug-in keeps it, :func:`record_statistics` sees an
    empty set without calling it (the Brain is asked once per game of a round)."""
    setattr(method, OWN_POP, True)
    return method


class StatisticsError(ValueError, AssertionError):
    """A statistic that cannot be added, or cannot be stored. An ``AssertionError`` too, as
    palaestrAI raises one for a taken key."""


def add_statistic(plugin: object, key: str, value: Any, allow_overwrite: bool = False) -> None:
    """Add ``key: value`` to ``plugin``'s statistics (see ``Brain.add_statistics``).

    Raises:
        StatisticsError: ``key`` is not a string, is taken without ``allow_overwrite``, the
            plug-in's ``_statistics`` is not a dict, or its steps are over
            (:func:`end_statistics`: its ``teardown()``).
    """
    ended = plugin.__dict__.get(ENDED)
    if ended is not None:
        raise StatisticsError(
            f"add_statistics({key!r}) after the last step of the phase: a statistic is stored "
            f"with the step it is added at, and the phase's rows were sent; {ended}"
        )
    statistics = plugin.__dict__.setdefault(ATTRIBUTE, {})
    if not isinstance(statistics, dict):
        raise StatisticsError(
            f"{type(plugin).__qualname__}._statistics is a {type(statistics).__name__}, not "
            "the dict add_statistics keeps its values in"
        )
    if not isinstance(key, str):
        raise StatisticsError(f"a statistic's key must be a str, not {type(key).__name__}")
    if key in statistics and not allow_overwrite:
        raise StatisticsError(
            f"statistic {key!r} was already added in this step; "
            "pass allow_overwrite=True to replace it"
        )
    statistics[key] = value


def end_statistics(plugin: object, advice: str) -> None:
    """``plugin``'s steps are over and its process sent its last rows (it tears down): a
    statistic it adds from now on could not be stored, and fails its call saying so and
    ``advice`` (where to add it instead)."""
    plugin.__dict__[ENDED] = advice


def pop_statistics(plugin: object) -> dict[str, Any]:
    """``plugin``'s statistics since the last pop; it starts a new, empty set."""
    statistics = plugin.__dict__.get(ATTRIBUTE)
    plugin.__dict__[ATTRIBUTE] = {}
    return statistics if isinstance(statistics, dict) else {}


def plain_statistics(values: Any) -> dict[str, Any]:
    """The popped statistics as plain JSON-able values for the store.

    numpy arrays and scalars (and anything else with a ``tolist()``, such as a torch tensor)
    become lists and numbers, tuples lists; dict keys stay str, int, float or bool (JSON text
    writes them as strings). Infinities and NaN stay floats (the store writes them as strings).

    Raises:
        StatisticsError: ``values`` is not a dict, or a value has no plain form (naming the
            key and the type).
    """
    if not isinstance(values, dict):
        raise StatisticsError(f"pop_statistics returned a {type(values).__name__}, not a dict")
    return {str(key): _plain(value, str(key)) for key, value in values.items()}


def _plain(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str | int | float):
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            raise StatisticsError(f"statistic {where!r}: the integer {value} exceeds 64 bits")
        return as_builtin(value)  # numpy's float64 and str_ are float and str too
    if isinstance(value, list | tuple):
        return [_plain(v, where) for v in value]
    if isinstance(value, dict):
        return {_key(k, where): _plain(v, where) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # numpy arrays and scalars, torch tensors
        return _plain(tolist(), where)
    if not isinstance(value, complex | bytes | bytearray | memoryview):
        try:
            return float(value)  # Decimal, Fraction, numbers with __float__
        except (TypeError, ValueError):
            pass
    raise StatisticsError(
        f"statistic {where!r}: a {type(value).__module__}.{type(value).__qualname__} has "
        "no form the store can hold; values must be numbers, strings, booleans, None, or "
        "lists and dicts of them (numpy arrays and tensors are converted)"
    )


def _key(key: Any, where: str) -> str | int | float | bool:
    if isinstance(key, str | int | float | bool):
        return key
    raise StatisticsError(
        f"statistic {where!r}: a dict key of type {type(key).__name__} has no JSON form"
    )


def holder(plugin: Any) -> dict[str, Any] | None:
    """Where ``plugin`` keeps what it added since the last pop, under :data:`ATTRIBUTE` (its
    ``__dict__``: nothing there, or an empty dict, is nothing added), where its class pops
    them as palaestra's base does; else None (it cannot be told)."""
    if getattr(type(plugin).pop_statistics, OWN_POP, False):
        namespace: dict[str, Any] = plugin.__dict__
        return namespace
    return None


def none_added(plugin: Any) -> bool:
    """Whether ``plugin`` is known to have added no statistics since the last pop (its class
    pops them as palaestra's base does, and none are there); False where it cannot tell."""
    if getattr(type(plugin).pop_statistics, OWN_POP, False):
        added = plugin.__dict__.get(ATTRIBUTE)
        return type(added) is dict and not added  # (nothing since the last pop: it stays)
    return False


def record_statistics(
    plugin: Any, sink: RowSink, source: str, worker: int, episode: int, step: int
) -> None:
    """Pop what ``plugin`` (a Brain or a Muscle, ``source``) added with ``add_statistics`` since
    the last time and add it to ``sink`` as one row; nothing when it added nothing. A value the
    store cannot hold fails the plug-in's ``add_statistics``."""
    if none_added(plugin):
        return
    values = call(plugin.pop_statistics)
    if not values:
        return
    try:
        plain = plain_statistics(values)
    except StatisticsError as exc:
        raise PluginError(plugin, "add_statistics") from exc
    sink.add(m.StatisticsRow(source, worker, episode, step, plain))
