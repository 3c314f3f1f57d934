"""Learning an environment's sensor and actuator ids while checking a run file.

Each environment of a run file is started once, so that an agent that names a sensor or
actuator the environment does not have is refused before any process starts. An environment
that is expensive to start can opt out with the class attribute
``check_ids_by_starting = False``; its ids are then checked when the run starts. A probe that
fails is not an error here: the run itself will report it, naming the process. A started
environment with a method ``players_taking_turns()`` (a PettingZoo AEC game's:
:meth:`~palaestra.environment.pettingzoo.PettingZooEnvironment.players_taking_turns`) also
tells its players and their actuators, so that the run file's check can refuse agents that do
not take their turns (:mod:`palaestra.experiment.runfile_turns`).

The probe runs in a child process of its own (its own process group), so that an
environment that blocks in its constructor, ``start_environment()`` or ``shutdown()`` can be
killed: one that has not answered within ``timeout`` seconds (the runtime config's
``probe_timeout``) is killed with everything it started, a warning names it and what hung,
and its ids are checked when the run starts, as if it had opted out. The child is forked where
the runs start their processes by fork; otherwise (the runtime config's ``start_method``, or
``auto`` with CUDA initialised here) it is spawned, a fresh interpreter, so that an environment
that touches the GPU never does so in a process forked from one that initialised CUDA, nor in
this one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import select
import signal
import sys
import time
from typing import Any, NamedTuple, TypeVar

from palaestra.core.description import limits
from palaestra.core.description.loading import load_class
from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.errors import InvalidInputError
from palaestra.core.supervision import interrupts, start_methods
from palaestra.core.supervision.processes import without_main
from palaestra.environment.aio import Awaiter
from palaestra.environment.world import construct

LOG = logging.getLogger(__name__)
_E = TypeVar("_E", bound=BaseException)

DEFAULT_PROBE_TIMEOUT = limits.PROBE_TIMEOUT
"""Seconds an environment may take to be constructed, started and shut down while checking."""

_POLL_MAX_MS = 2**31 - 1
"""The longest wait ``poll`` takes (a C int of milliseconds, 24.8 days): a longer
``probe_timeout`` (``.inf``, ``1e9``) waits in parts of it."""

_STAGES = {
    "construct": "its constructor",
    "start": "start_environment()",
    "shutdown": "shutdown()",
}


class InvalidEnvironmentError(InvalidInputError):
    """The environment refused its params while probed (an :class:`InvalidInputError` of its
    constructor or start: an unknown id, a missing extra, a space it cannot map); the run
    file's check reports it at the environment's params, before any process starts."""


class Probed(NamedTuple):
    """What a probe learnt of an environment: its full sensor and actuator ids (``uid.id``),
    and the players of a game that takes turns, in its order, each with its full actuator ids
    (empty for any other environment)."""

    ids: dict[str, set[str]]
    turns: list[tuple[str, list[str]]]


class EnvironmentIds:
    """The full sensor and actuator ids (``uid.id``) of environments, probed once each.

    Args:
        timeout: Seconds each probe may take before it is killed (and the ids are left to
            the run).
        start_method: The runtime config's ``start_method``: the probes are forked where it
            is fork (or ``auto`` without CUDA initialised in this process), else spawned.
    """

    def __init__(
        self, timeout: float = DEFAULT_PROBE_TIMEOUT, start_method: str = start_methods.AUTO
    ) -> None:
        self.timeout = timeout
        self.start_method = start_method
        self._known: dict[str, Probed | None] = {}

    def of(self, spec: EnvironmentSpec) -> dict[str, set[str]] | None:
        """``{"sensors": {...}, "actuators": {...}}``, or None if they cannot be known now."""
        probed = self._probed(spec)
        return None if probed is None else probed.ids

    def turns(self, spec: EnvironmentSpec) -> list[tuple[str, list[str]]]:
        """The players of a game that takes turns, in its order, each with its full actuator
        ids; empty for any other environment, or if they cannot be known now."""
        probed = self._probed(spec)
        return [] if probed is None else probed.turns

    def _probed(self, spec: EnvironmentSpec) -> Probed | None:
        key = json.dumps([spec.name, spec.uid, spec.params], sort_keys=True, default=repr)
        if key not in self._known:
            forked = start_methods.resolve_quietly(self.start_method) == start_methods.FORK
            self._known[key] = _probe(spec, self.timeout, forked)
        return self._known[key]


def _probe(spec: EnvironmentSpec, timeout: float, forked: bool) -> Probed | None:
    try:
        if not getattr(load_class(spec.name), "check_ids_by_starting", True):
            return None
    except Exception as exc:  # noqa: BLE001 - the user's module: the loader reports it
        LOG.debug("could not load environment %s: %r", spec.uid, exc)
        return None
    found = _Prober(spec, timeout, forked).run()
    if found is None:
        return None
    prefix = f"{spec.uid}."
    ids = {
        "sensors": {prefix + uid for uid in found["sensors"]},
        "actuators": {prefix + uid for uid in found["actuators"]},
    }
    turns = [
        (str(player), [prefix + str(uid) for uid in uids])
        for player, uids in found.get("turns", [])
    ]
    return Probed(ids, turns)


class _Prober:
    """Runs one probe in a child (forked, or spawned); reads its progress and result from a
    pipe."""

    def __init__(self, spec: EnvironmentSpec, timeout: float, forked: bool) -> None:
        self.spec = spec
        self.timeout = timeout
        self.forked = forked
        self.stage = "construct"

    def run(self) -> dict[str, Any] | None:
        """The environment's local sensor and actuator ids (and its players taking turns), or
        None (failed or timed out)."""
        read, write = os.pipe()
        spawned: multiprocessing.process.BaseProcess | None = None
        if self.forked:
            pid = self._fork(read, write)
        else:
            spawned = _spawn(self.spec, write)
            assert spawned.pid is not None  # started
            pid = spawned.pid
        try:
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # the child does it too: whichever comes first
            # A signal that came while this process forked had its exception raised in an
            # at-fork callback, where Python drops it (only the record is left): without this
            # the wait below would hold the command for up to probe_timeout.
            interrupts.raise_if_received()
            return self._result(read, pid)
        finally:  # a timeout, an interrupt, or done: nothing of the probe survives it
            os.close(read)
            _kill_group(pid)
            if spawned is not None:
                spawned.join()  # through multiprocessing, which would wait for it at exit
            else:
                os.waitpid(pid, 0)

    def _fork(self, read: int, write: int) -> int:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()  # or the child would write our buffered output again
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; it reports through the pipe
            os.close(read)
            _child(self.spec, write)
        os.close(write)
        return pid

    def _result(self, read: int, pid: int) -> dict[str, Any] | None:
        deadline = time.monotonic() + self.timeout
        poller = select.poll()
        poller.register(read, select.POLLIN)
        buffer = b""
        found: dict[str, Any] | None = None  # known once started, before shutdown()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._timed_out(found is not None)
                return found
            if not poller.poll(min(left * 1000, _POLL_MAX_MS)):
                continue  # (the deadline is looked at again)
            chunk = os.read(read, 65536)
            if not chunk:  # the child ended early: the run will report why
                LOG.debug("probe of %s ended during %s", self.spec.uid, self.stage)
                return found
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                kind, _, value = line.decode().partition(" ")
                if kind == "stage":
                    self.stage = value
                elif kind == "result":
                    found = json.loads(value)
                elif kind == "done":
                    return found
                elif kind == "invalid":
                    raise InvalidEnvironmentError(json.loads(value))
                else:  # the environment raised: the run reports it, naming the process
                    LOG.debug("could not probe environment %s: %s", self.spec.uid, value)
                    return found

    def _timed_out(self, ids_known: bool) -> None:
        then = (
            "Its ids were known already and are checked."
            if ids_known
            else "Its ids are checked when the run starts instead."
        )
        LOG.warning(
            "environment '%s' (%s): %s did not return within %g s while checking the run "
            "file's sensor and actuator ids; the probe was killed. %s Raise probe_timeout in "
            "the runtime config, or set check_ids_by_starting = False on the class.",
            self.spec.uid,
            self.spec.name,
            _STAGES.get(self.stage, self.stage),
            self.timeout,
            then,
        )


def _spawn(spec: EnvironmentSpec, write: int) -> multiprocessing.process.BaseProcess:
    """Start the probe of ``spec`` as a fresh interpreter that writes to ``write`` (closed
    here once it has started)."""
    pipe = multiprocessing.connection.Connection(write, readable=False)
    process = start_methods.context(start_methods.SPAWN).Process(
        target=_spawned_child, args=(spec, pipe), name=f"probe-{spec.uid}", daemon=False
    )
    try:
        with without_main(), interrupts.held_from_fresh_child():
            process.start()
    finally:
        pipe.close()
    return process


def _spawned_child(
    spec: EnvironmentSpec, pipe: multiprocessing.connection.Connection
) -> None:  # pragma: no cover - runs in the child
    _child(spec, pipe.fileno())


def _child(spec: EnvironmentSpec, write: int) -> None:  # pragma: no cover - runs in the child
    """Construct, start and shut down the environment; report each stage, then the ids."""
    code = 0
    try:
        os.setpgid(0, 0)  # killable as a group, out of reach of the terminal's Ctrl-C
        interrupts.leave_to_executor()  # Ctrl-C (a closed terminal) is the parent's to handle
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        from palaestra.core.supervision.processes import die_with_parent
        from palaestra.core.supervision.reaper import become_subreaper, take_down_strays

        die_with_parent(os.getppid())
        become_subreaper()
        try:
            _start_and_stop(spec, write)
            _report(write, "done", "")
        except Exception as exc:  # noqa: BLE001 - the user's environment: the run reports it
            invalid = _in_chain(exc, InvalidInputError, context=False)
            missing = _in_chain(exc, FileNotFoundError, context=True)
            if invalid is not None:
                _report(write, "invalid", json.dumps(invalid.format_message()))
            elif missing is not None:  # a data file the environment needs is not there
                _report(write, "invalid", json.dumps(_missing_message(spec, missing)))
            else:
                _report(write, "error", repr(exc).replace("\n", " "))
        take_down_strays(f"probe of environment '{spec.uid}'")
    except BaseException:  # noqa: BLE001 - never return into the parent's code
        code = 1
    finally:
        os._exit(code)


def _start_and_stop(spec: EnvironmentSpec, write: int) -> None:
    """Report each stage as it begins, and the ids as soon as they are known."""
    _report(write, "stage", "construct")
    env = construct(spec, seed=0)
    awaiter = Awaiter(f"probe of environment '{spec.uid}'")  # an async environment's loop
    _report(write, "stage", "start")
    try:
        started = awaiter(env, "start_environment", env.start_environment())
        sensors, actuators = tuple(started)[:2]
        ids: dict[str, Any] = {
            "sensors": [str(s.uid) for s in sensors],
            "actuators": [str(a.uid) for a in actuators],
        }
        players_taking_turns = getattr(env, "players_taking_turns", None)
        if callable(players_taking_turns):  # (a PettingZoo AEC game's)
            ids["turns"] = [[str(p), [str(u) for u in uids]] for p, uids in players_taking_turns()]
        _report(write, "result", json.dumps(ids))
    finally:
        _report(write, "stage", "shutdown")
        try:
            awaiter(env, "shutdown", env.shutdown(), closing=True)
        finally:
            awaiter.close()


def _in_chain(exc: BaseException, kind: type[_E], *, context: bool) -> _E | None:
    """The ``kind`` error that ``exc`` is or was caused by (a plug-in's own exception arrives
    wrapped in a PluginError), with ``context`` also one it was raised while handling (as
    palaestrai-mosaik wraps MIDAS's FileNotFoundError); None if none in 16 links."""
    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None or isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or (seen.__context__ if context else None)
    return None


MIDAS_DATA = "midas_data"
"""The folder MIDAS keeps its downloaded data sets in (``~/.config/midas/midas_data``)."""


def _missing_message(spec: EnvironmentSpec, missing: FileNotFoundError) -> str:
    """What the check says of an environment that could not start for a missing file."""
    what = str(missing) if missing.filename is None else str(missing.filename)
    message = (
        f"environment '{spec.uid}' ({spec.name}) could not start: a file it needs is not "
        f"there: {what}."
    )
    if MIDAS_DATA in what:
        message += (
            " It is one of MIDAS's data sets, which this scenario's modules read: download "
            "them once (midasctl download), or choose a scenario of MIDAS's store and "
            "powergrid modules only, which runs offline with the MIDAS param "
            "skip_download: true."
        )
    return message


def _report(write: int, kind: str, value: Any) -> None:
    os.write(write, f"{kind} {value}\n".encode())


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
