"""When a Brain process dumps its Brain, and where the dumps go.

A Brain is dumped (its ``store``) after a Muscle's episode ends: every episode, or every
``dump.every``-th of the agent's ``dump`` policy (whose dumps keep the newest ``dump.keep``),
and once more at the phase's end where it learned since its last dump or the policy asks for
it. Each dump is kept until it is sent to the store as a
:class:`~palaestra.core.wire.messages.BrainDump`: the Brain process sends them once it has
answered the round (or the evaluation) whose episode ends made them. The store holds every
dump; the dump's file in the run's dump directory (one a tag: each dump of a tag replaces the
last) holds the newest, written when the dumps are sent, at most once a :data:`FILE_SECONDS`
while the phase runs (a dump held meanwhile goes with a later send), and at its end or the
process's failure whatever is newer; a dump made in the Brain's ``teardown`` reaches its file
only. A file is written beside itself and renamed over itself: a write that fails (a full
disk) leaves the dump before it whole. Writing a file again costs 0.1 to 0.5 ms (most of it the
file system's flush of a file written again): written at each episode's end, it took a fifth
of the time of a run of 16-step episodes.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from typing import Any

import zmq

from palaestra.core.description.name_rules import UnsafePathError, check_inside, dump_file_name
from palaestra.core.errors import PalaestraError
from palaestra.core.plugin import call
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import send

LOG = logging.getLogger(__name__)

FILE_SECONDS = 1.0
"""While a phase runs, the seconds at least between two writes of a Brain's dump files."""

_clock = time.monotonic


class DumpWriteError(PalaestraError):
    """A Brain's dump could not be written to its file (a full disk, a directory made
    read-only): the run fails naming the file and the cause, not the Brain that asked
    (:func:`~palaestra.core.supervision.runtime.error_info` reports palaestra's own error)."""

    def __init__(self, agent: str, path: str, exc: OSError) -> None:
        why = exc.strerror or str(exc)
        self.path = path
        super().__init__(
            f"the dump of agent '{agent}' could not be written to {path}: {why} "
            f"[errno {exc.errno}]. The dumps go below the runtime config's data_path (or "
            "PALAESTRA_DATA_PATH): free space there, or set it to a directory with room that "
            "you may write in"
        )


class DumpKeeper:
    """The dumps of the Brain of agent setup ``setup`` (see the module's description)."""

    __slots__ = (
        "setup",
        "policy",
        "episodes_ended",
        "keep",
        "stored",
        "pending",
        "unwritten",
        "written_at",
    )

    def __init__(self, setup: m.AgentSetup) -> None:
        self.setup = setup
        self.policy = setup.agent.dump  # None: a dump per episode (and at the end)
        self.episodes_ended = 0
        self.keep = 0  # of the dumps being written: see m.BrainDump.keep
        self.stored = True  # nothing learned yet that a dump would lose
        self.pending: list[m.BrainDump] = []  # not yet sent to the store
        self.unwritten: dict[str, bytes] = {}  # the newest dump of a file, not yet written
        self.written_at = -math.inf  # when the files were last written (monotonic seconds)

    def write(self, data: bytes, tag: str) -> None:
        """Keep a dump the Brain made, for its file (if the run has a dump directory) and the
        store (see :meth:`send`)."""
        setup = self.setup
        path = ""
        if setup.dump_dir:
            name = dump_file_name(setup.agent.name, tag)
            path = os.path.abspath(os.path.join(setup.dump_dir, name))
            self.unwritten[path] = data  # (the newest of its file)
        self.pending.append(
            m.BrainDump(agent_id=setup.agent_id, tag=tag, path=path, dump=data, keep=self.keep)
        )

    def write_files(self) -> None:
        """Write the newest unwritten dump of each file now, each checked to resolve inside
        the dump directory first; every file is tried, the first failure raised (a Brain's
        ``teardown`` may dump after its producer closed: its dumps reach their files, not the
        store).

        Raises:
            DumpWriteError: A file, or the dump directory, could not be written.
            UnsafePathError: A file would resolve outside the dump directory.
        """
        newest, self.unwritten = self.unwritten, {}
        self.written_at = _clock()
        if not newest:
            return
        setup = self.setup
        try:
            os.makedirs(setup.dump_dir, exist_ok=True)  # (before the check: it resolves it)
        except OSError as exc:
            raise DumpWriteError(setup.agent.name, setup.dump_dir, exc) from None
        failure: PalaestraError | None = None
        for path, data in newest.items():
            try:
                check_inside(path, setup.dump_dir)
                _replace(path, data)
            except OSError as exc:
                failure = failure or DumpWriteError(setup.agent.name, path, exc)
            except UnsafePathError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def due(self) -> bool:
        """Whether the episode a Muscle just ended is one to dump after."""
        self.episodes_ended += 1
        policy = self.policy
        return policy is None or self.episodes_ended % policy.every == 0

    def last_due(self) -> bool:
        """Whether the phase's end dumps the Brain once more."""
        return not self.stored or self.policy is not None

    def store(self, brain: Any, periodic: bool = False) -> None:
        """Dump ``brain`` (its ``store``): after an episode (``periodic``) or at the end."""
        policy = self.policy
        self.keep = policy.keep if periodic and policy is not None else 0
        try:
            call(brain.store)
        finally:
            self.keep = 0
        self.stored = True

    def send(self, store: zmq.Socket[bytes] | None, block: bool = True, last: bool = True) -> None:
        """Send the dumps kept so far to the store (which holds each), their files written
        first: the newest dump of each, where ``last`` (the phase's end, a failure) or once
        :data:`FILE_SECONDS` passed since they were last written (else a later send writes
        it). A file that cannot be written fails the Brain process once its dumps are sent,
        unless not ``block``: what a failing process sends without waiting, where its own
        failure is the one to report (a file's is logged).

        Raises:
            DumpWriteError: A file, or the dump directory, could not be written.
            UnsafePathError: A file would resolve outside the dump directory.
        """
        if not self.pending and not self.unwritten:  # (most rounds: nothing to do)
            return
        failure: Exception | None = None
        if self.unwritten and (last or _clock() - self.written_at >= FILE_SECONDS):
            try:
                self.write_files()
            except Exception as exc:  # noqa: BLE001 - raised below, or logged by a failing process
                if not block:
                    LOG.warning("%s: %s", self.setup.agent.name, exc)
                failure = exc
        dumps, self.pending = self.pending, []
        for dump in dumps:
            send(store, dump, block)
        if failure is not None and block:
            raise failure


def _replace(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a new file beside it, renamed over it: a failure
    (a full disk) leaves the old file whole and no half-written one, and a link planted at
    either name is replaced, not followed."""
    part = path + ".part"  # (not a dump's name: dumps end in .bin)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(part)  # (a killed process's)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
