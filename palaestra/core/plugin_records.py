"""Plug-ins' own records: ``context.record(key, value)`` and recording pause/resume requests.

A Brain, Muscle or Environment records a JSON value under a key during a step; palaestra takes
the step's records after the step (:meth:`PluginRecorder.pop`) and sends them, batched like
statistics, to the store's ``plugin_records`` table. A plug-in may also ask to pause or resume
the recording of the run's steps (see :mod:`palaestra.core.recording_control`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from palaestra.core.description.name_rules import TEXT_MAX, column_problem
from palaestra.core.errors import PalaestraError
from palaestra.core.recording_control import RecordingSwitch
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import RowSink

INT64 = (-(1 << 63), (1 << 63) - 1)


class PluginRecordError(PalaestraError, ValueError):
    """A value a plug-in recorded has no JSON form: the plug-in fails its run (exit 1)."""


class PluginRecorder:
    """Collects a plug-in's ``record(key, value)`` calls of one step.

    Args:
        owner: Who records, for messages (``muscle 'a' of worker 0``).
        on_pause: Called with True (pause) or False (resume) when the plug-in asks to pause or
            resume recording; None: the request is ignored (no run to control).
    """

    def __init__(self, owner: str = "a plug-in", on_pause: Callable[[bool], None] | None = None):
        self.owner = owner
        self.on_pause = on_pause
        self.records: list[tuple[str, Any]] = []
        self.ended: str | None = None
        """Set by :meth:`end`: what to tell a plug-in that records after its last step."""

    def record(self, key: str, value: Any) -> None:
        """Record ``value`` (JSON: numbers, strings, booleans, None, lists and dicts of them;
        numpy arrays and scalars are converted) under ``key`` at the current step.

        Raises:
            PluginRecordError: ``key`` is not a string of 1 to 255 characters without a NUL
                character (which PostgreSQL's text columns refuse), ``value`` has no JSON
                form, or the plug-in's steps are over (:meth:`end`: its ``teardown()``); the
                message names the plug-in method that called and the key.
        """
        method = sys._getframe(2).f_code.co_name  # the plug-in's method (past the context)
        if not isinstance(key, str) or not key or column_problem(key) is not None:
            shown = key if not isinstance(key, str) or len(key) <= 40 else f"{key[:40]}..."
            raise PluginRecordError(
                f"{self.owner}: {method}() called context.record with the key {shown!r}: "
                f"expected a non-empty string of at most {TEXT_MAX} characters without a NUL "
                "character"
            )
        if self.ended is not None:
            raise PluginRecordError(
                f"{self.owner}: {method}() called context.record({key!r}) after the last "
                "step of the phase: a record is stored with the step it is made at, and the "
                f"phase's rows were sent; {self.ended}"
            )
        where = f"{self.owner}: {method}() recorded {key!r}"
        self.records.append((key, plain(value, where)))

    def end(self, advice: str) -> None:
        """The plug-in's steps are over and its process sent its last rows (it tears down):
        a record from now on could not be stored, and fails the plug-in's call saying so and
        ``advice`` (where to record instead)."""
        self.ended = advice

    def pop(self) -> list[tuple[str, Any]]:
        """The records since the last pop, in the order they were made."""
        records, self.records = self.records, []
        return records

    def pause(self, paused: bool = True) -> None:
        """Ask palaestra to pause (or, with False, resume) recording the run's steps."""
        if self.on_pause is not None:
            self.on_pause(paused)


def plain(value: Any, where: str) -> Any:
    """``value`` as plain JSON (numpy values converted); ``where`` names it in errors.

    Raises:
        PluginRecordError: A part of ``value`` has no JSON form.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str | int | float):
        return _scalar(value, where)
    if isinstance(value, list | tuple):
        return [plain(v, where) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise PluginRecordError(f"{where}: a dict with a key that is not a str")
        return {k: plain(v, where) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, bytes | bytearray):
        return plain(tolist(), where)
    raise PluginRecordError(
        f"{where}: a {type(value).__module__}.{type(value).__qualname__} has no JSON form; "
        "values must be numbers, strings, booleans, None, or lists and dicts of them"
    )


def _scalar(value: str | int | float, where: str) -> str | int | float:
    """A string or a number, checked, as its built-in type (see :func:`as_builtin`)."""
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        raise PluginRecordError(f"{where}: the integer {value} exceeds 64 bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise PluginRecordError(f"{where}: {value} has no JSON form (finite numbers only)")
    return as_builtin(value)


def as_builtin(value: str | int | float) -> str | int | float:
    """``value`` as a plain ``str``, ``int`` or ``float``: numpy's ``float64`` and ``str_`` are
    subclasses of ``float`` and ``str`` that the message encoder refuses."""
    kind = type(value)
    if kind is float or kind is int or kind is str:
        return value
    if isinstance(value, str):
        return str(value)
    return int(value) if isinstance(value, int) else float(value)


class RecordingContext:
    """What a plug-in's context offers for records: mixed into the Brain's, Muscle's and
    Environment's contexts, which have a ``recorder`` field."""

    recorder: PluginRecorder

    def record(self, key: str, value: Any) -> None:
        """Record a JSON ``value`` under ``key`` at the current step (``plugin_records``).

        Raises:
            PluginRecordError: ``key`` is not a string, or ``value`` has no JSON form.
        """
        self.recorder.record(key, value)

    def pause_recording(self, paused: bool = True) -> None:
        """Pause recording the run's steps (``world_states``, ``muscle_actions``) from the next
        step on, in every process of the run; with False, resume it."""
        self.recorder.pause(paused)

    def resume_recording(self) -> None:
        """Resume recording the run's steps (see :meth:`pause_recording`)."""
        self.recorder.pause(False)


def recorder_for(owner: str) -> PluginRecorder:
    """The recorder of a plug-in of the running run: its pause requests set the run's flag."""
    return PluginRecorder(owner, on_pause=RecordingSwitch().set)


def send_records(
    recorder: PluginRecorder, sink: RowSink, source: str, worker: int, episode: int, step: int
) -> None:
    """Add what the plug-in recorded since the last time to ``sink`` as rows of this step."""
    if not recorder.records:  # (most steps: nothing)
        return
    for key, value in recorder.pop():
        sink.add(m.PluginRecordRow(source, worker, episode, step, key, value))
