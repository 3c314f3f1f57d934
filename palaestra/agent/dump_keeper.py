"""When a Brain process dumps its Brain, and where the dumps go.

A Brain is dumped (its ``store``) after a Muscle's episode ends: every episode, or every
``dump.every``-th of the agent's ``dump`` policy (whose dumps keep the newest ``dump.keep``),
and once more at the phase's end where it learned since its last dump or the policy asks for
it. Each dump is written to a file in the run's dump directory (where it has one) and kept
until it is sent to the store as a :class:`~palaestra.core.wire.messages.BrainDump`.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import zmq

from palaestra.core.description.name_rules import check_inside, dump_file_name
from palaestra.core.errors import PalaestraError
from palaestra.core.plugin import call
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import send


class DumpWriteError(PalaestraError):
    """A Brain's dump could not be written to its file (a full disk, a directory made
    read-only): the run fails naming the file and the cause, not the Brain that asked
    (:func:`~palaestra.core.supervision.runtime.error_info` reports palaestra's own error)."""

    def __init__(self, agent: str, path: str, exc: OSError) -> None:
        why = exc.strerror or str(exc)
        super().__init__(
            f"the dump of agent '{agent}' could not be written to {path}: {why} "
            f"[errno {exc.errno}]. The dumps go below the runtime config's data_path (or "
            "PALAESTRA_DATA_PATH): free space there, or set it to a directory with room that "
            "you may write in"
        )


class DumpKeeper:
    """The dumps of the Brain of agent setup ``setup`` (see the module's description)."""

    __slots__ = ("setup", "policy", "episodes_ended", "keep", "stored", "pending")

    def __init__(self, setup: m.AgentSetup) -> None:
        self.setup = setup
        self.policy = setup.agent.dump  # None: a dump per episode (and at the end)
        self.episodes_ended = 0
        self.keep = 0  # of the dumps being written: see m.BrainDump.keep
        self.stored = True  # nothing learned yet that a dump would lose
        self.pending: list[m.BrainDump] = []

    def write(self, data: bytes, tag: str) -> None:
        """Write a dump the Brain made (its file, if the run has a dump directory) and keep
        it for the store."""
        setup = self.setup
        path = ""
        if setup.dump_dir:
            name = dump_file_name(setup.agent.name, tag)
            path = check_inside(os.path.join(setup.dump_dir, name), setup.dump_dir)
            try:
                os.makedirs(setup.dump_dir, exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
            except OSError as exc:
                with contextlib.suppress(OSError):  # (nothing half-written is left)
                    os.remove(path)
                raise DumpWriteError(setup.agent.name, path, exc) from None
        self.pending.append(
            m.BrainDump(agent_id=setup.agent_id, tag=tag, path=path, dump=data, keep=self.keep)
        )

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

    def send(self, store: zmq.Socket[bytes] | None, block: bool = True) -> None:
        """Send the dumps kept so far to the store."""
        dumps, self.pending = self.pending, []
        for dump in dumps:
            send(store, dump, block)
