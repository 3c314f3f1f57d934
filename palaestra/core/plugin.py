"""The boundary around user plug-ins: every call into one goes through :func:`call`.

A plug-in (Brain, Muscle, Objective, Environment, termination condition) is user code; whatever
escapes from it, an exception or a ``sys.exit()``, becomes a :class:`PluginError` naming the
plug-in by its class and the method (``my_pkg.agents:MyMuscle.propose_actions``), with the
user's exception as its cause. The happy path costs one extra function call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

from palaestra.core.errors import PalaestraError

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class PluginError(Exception):
    """An exception raised inside a user plug-in method; carries which one.

    Args:
        plugin: The plug-in instance, or its class (for a failing constructor).
        method: The method that failed.
        where: Where in the run it failed, if the report should say (``"at step 3"``).
    """

    def __init__(self, plugin: object, method: str, where: str = "") -> None:
        cls = plugin if isinstance(plugin, type) else type(plugin)
        self.plugin = f"{cls.__module__}:{cls.__qualname__}.{method}"
        if where:
            self.plugin = f"{self.plugin} {where}"
        super().__init__(self.plugin)


CONTRACTS = "docs/plugin-api.md"
"""The documentation page of the plug-in contracts, which a contract error points at."""


class PluginContractError(PalaestraError):
    """A plug-in returned something its contract does not allow (a set point for an actuator
    it was not given, a sensor value outside its space): the message names the plug-in, the
    method, the uid and the value, and points at the contracts' page. Not a bug in palaestra,
    so no traceback."""

    def __init__(self, plugin: object, method: str, problem: str) -> None:
        self.plugin = PluginError(plugin, method).plugin
        super().__init__(f"{self.plugin} {problem} (see {CONTRACTS})")


FAILURES = (Exception, SystemExit, KeyboardInterrupt, GeneratorExit)
"""What a plug-in's call may raise that :func:`call` reports as the plug-in's failure (a loop
that calls a plug-in once a game catches them itself, reporting :func:`error_of`)."""


def call(function: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Call a plug-in's bound method (or construct a plug-in class) on the plug-in's behalf.

    Raises:
        PluginError: The call raised, or tried to end the process (``SystemExit``,
            ``KeyboardInterrupt``, a stray ``GeneratorExit``); the original is the cause.
    """
    try:
        return function(*args, **kwargs)
    except FAILURES as exc:
        raise error_of(function) from exc


def call_each(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """:func:`call` of ``function`` with each of ``items`` (a round's games, say), in order:
    what each call returned; a call that raises is reported as :func:`call` reports it."""
    try:
        return [function(item) for item in items]
    except FAILURES as exc:
        raise error_of(function) from exc


def error_of(function: Callable[..., object]) -> PluginError:
    """The error :func:`call` raises for a call of ``function`` that failed."""
    if isinstance(function, type):
        return PluginError(function, "__init__")
    owner = getattr(function, "__self__", None)
    name = getattr(function, "__name__", repr(function))
    if owner is None:  # a plain function: name it by its module
        module = getattr(function, "__module__", "?")
        error = PluginError(function, "")
        error.plugin = f"{module}:{getattr(function, '__qualname__', name)}"
        error.args = (error.plugin,)
        return error
    return PluginError(owner, name)
