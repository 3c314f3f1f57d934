"""The base of every message and the data carried inside messages."""

from __future__ import annotations

from typing import Any

import msgspec


class Msg(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag=True,
    array_like=True,
    forbid_unknown_fields=True,
):
    """Base of all messages; the tag (class name) selects the type on decoding."""


# --- data carried inside messages -------------------------------------------------------


class InfoDesc(msgspec.Struct, frozen=True, array_like=True):
    """A sensor, actuator or reward: uid, space description (``Space.to_text()``: JSON text,
    which decodes in a third of the time of its dict), value."""

    uid: str
    space: str | None
    value: Any = None


class ErrorInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An exception that ended a process, as data: printed once by the executor and stored.

    ``kind`` is the exception's class name; ``run_exit_code`` the exit code it gives the run
    (a :class:`~palaestra.core.errors.PalaestraError` knows its own: a ``StoreError`` gives 3,
    invalid input 2; anything else 1), so the class of an error survives the trip between
    processes. ``exit_code`` is the exit code of the process that ended, where one did.
    """

    process: str
    kind: str
    message: str
    traceback: str = ""
    plugin: str = ""
    exit_code: int | None = None
    run_exit_code: int = 1

    def describe(self) -> str:
        where = f"{self.process} ({self.plugin})" if self.plugin else self.process
        text = f"{where}: {self.kind}: {self.message}" if self.kind else f"{where}: {self.message}"
        if self.traceback:
            tail = "\n".join(self.traceback.rstrip().splitlines()[-6:])
            text = f"{text}\n{tail}"
        return text


class AgentEvaluated(Msg, frozen=True, kw_only=True):
    """The Brain's ``EvaluationResult``: ``metrics`` by name (None where a value is not a
    number); ``result`` False if ``evaluate_rollouts`` returned None. The answer to
    :class:`~palaestra.core.wire.messages.step.AgentEvaluate`, and carried in a resumed
    phase's :class:`~palaestra.core.wire.messages.control.SimulationRun`."""

    agent: str
    evaluation: int
    result: bool
    metrics: dict[str, float | None] = {}
    checkpoint_id: str | None = None
    checkpoint_hash: str | None = None
