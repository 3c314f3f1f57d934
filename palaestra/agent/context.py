"""What palaestra hands a Brain or Muscle before ``setup()``: names, seeds, spaces, dumps."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from palaestra.core.description.name_rules import column_problem, dump_key
from palaestra.core.information import ActuatorInformation, SensorInformation
from palaestra.core.mode import Mode
from palaestra.core.plugin_records import PluginRecorder, RecordingContext

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrainDumps:
    """Where a Brain's dumps go, and the dumps it (and its Muscles) may load, by tag.

    Args:
        loaded: The dumps this agent starts from (``load:`` in the run file, or the previous
            phase), the newest of each tag, by :func:`dump_key`; a plain ``bytes`` is the
            untagged dump alone.
        write: Called with ``(data, tag)`` to persist a dump (store and file); None for a
            Muscle's copy, which only loads.
        source: Where the loaded dumps come from, for messages (``agent 'a' in phase 0 of run
            'r'``); empty if there is nowhere to load from.
        owner: Who loads, for messages (the process name).
        nowhere: Why there is nowhere to load from, for messages, where it is not the usual
            reason (the first phase, and no ``load:``).
    """

    loaded: Mapping[str, bytes] | bytes | None = None
    write: Callable[[bytes, str], None] | None = None
    source: str = ""
    owner: str = ""
    nowhere: str = ""

    def store(self, data: bytes | bytearray | memoryview | BinaryIO, tag: str | None = "") -> None:
        """Persist ``data`` whole: a stream is read from its start (palaestrAI's rule: a stream
        just written to is positioned at its end) and left at its end.

        Raises:
            TypeError: ``data`` is neither bytes nor a binary stream (a str, a text stream, a
                numpy array), or ``tag`` is not a str: said so here, in the Brain's call, not by
                the store writer that would receive it.
            ValueError: ``tag`` is longer than 255 characters (what the store's column holds),
                or holds a NUL character (which PostgreSQL's column refuses).
        """
        _check_tag(tag)
        if isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
        elif callable(getattr(data, "read", None)):
            if data.seekable():
                data.seek(0)
            read = data.read()
            if not isinstance(read, bytes | bytearray | memoryview):
                raise TypeError(
                    f"a brain dump is bytes or a binary stream, but {type(data).__name__}.read() "
                    f"gave {type(read).__name__} (a text stream: use io.BytesIO, or open the "
                    "file with 'rb')"
                )
            payload = bytes(read)
        else:
            raise TypeError(
                "a brain dump is bytes or a binary stream (io.BytesIO, a file opened with 'rb'), "
                f"not {type(data).__name__}"
            )
        if not payload:
            LOG.warning(
                "%s stored an empty brain dump (tag %r): 0 bytes; loading it will restore nothing",
                self.owner or "a brain",
                tag or "",
            )
        if self.write is not None:
            self.write(payload, tag or "")

    def load(self, tag: str | None = "") -> bytes | None:
        """The newest loaded dump with ``tag``, or None (with a warning saying what is there)."""
        found = self._found()
        data = found.get(dump_key(tag))
        if data is None:
            # A brain asked with nowhere to load from (palaestra calls ``load`` in every
            # phase) is normal; so is a tag asked for among other dumps (harl's SAC asks for
            # its portable state first and falls back, as palaestrAI lets it, quietly); a
            # source that left nothing at all is a dump a plug-in expected and did not get.
            if not self.source and self.write is not None:
                level = logging.INFO
            elif found:
                level = logging.DEBUG
            else:
                level = logging.WARNING
            LOG.log(level, "%s: %s", self.owner or "a brain", self._missing(tag or "", found))
        elif not data:
            LOG.warning(
                "%s: the brain dump tagged %r of %s is empty (0 bytes)",
                self.owner or "a brain",
                tag or "",
                self.source,
            )
        return data

    def __iter__(self) -> Iterator[BrainDumps]:
        """palaestrAI's plug-ins iterate over a list of dumpers: this is the one."""
        return iter((self,))

    @property
    def _brain_source(self) -> str | None:
        """palaestrAI's dumper attribute: where dumps are loaded from, None if nowhere."""
        return self.source if self._found() else None

    def tags(self) -> list[str]:
        """The keys (:func:`dump_key`) of the loaded dumps, sorted."""
        return sorted(self._found())

    def _found(self) -> Mapping[str, bytes]:
        if self.loaded is None:
            return {}
        if isinstance(self.loaded, bytes):
            return {"": self.loaded}
        return self.loaded

    def _missing(self, tag: str, found: Mapping[str, bytes]) -> str:
        what = f"no brain dump tagged {tag!r} to load" if tag else "no untagged brain dump to load"
        if not self.source:
            why = self.nowhere or "the first phase, and no `load:`"
            return f"{what}: there is nowhere to load from ({why})"
        if not found:
            return f"{what}: {self.source} left no dump"
        tags = ", ".join(repr(t) for t in sorted(found))
        return f"{what}: {self.source} left dumps tagged {tags}"


@dataclass(frozen=True)
class BrainContext(RecordingContext):
    """Everything a :class:`~palaestra.agent.brain.Brain` may know about where it runs."""

    name: str
    run_uid: str
    phase_index: int
    phase_name: str
    mode: Mode | str
    """The phase's mode; given as a string, it becomes the :class:`Mode` of that value."""
    seed: int
    sensors: Sequence[SensorInformation]
    actuators: Sequence[ActuatorInformation]
    dumps: BrainDumps = field(default_factory=BrainDumps)
    recorder: PluginRecorder = field(default_factory=PluginRecorder)
    """Takes :meth:`record` and the pause requests (palaestra sends what it collects)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # "train" == Mode.TRAIN


@dataclass(frozen=True)
class MuscleContext(RecordingContext):
    """Everything a :class:`~palaestra.agent.muscle.Muscle` may know about where it runs."""

    name: str
    uid: str
    worker: int
    mode: Mode | str
    """The phase's mode; given as a string, it becomes the :class:`Mode` of that value."""
    seed: int
    sensors: Sequence[SensorInformation]
    actuators: Sequence[ActuatorInformation]
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    dumps: BrainDumps = field(default_factory=BrainDumps)
    """The agent's loaded brain dumps (read only), for :meth:`Muscle.prepare_model`."""
    recorder: PluginRecorder = field(default_factory=PluginRecorder)
    """Takes :meth:`record` and the pause requests (palaestra sends what it collects)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # "train" == Mode.TRAIN


def _check_tag(tag: object) -> None:
    """Fail where the store cannot keep ``tag`` as a brain dump's tag (see
    :meth:`BrainDumps.store`)."""
    if tag is None:
        return
    if not isinstance(tag, str):
        raise TypeError(f"a brain dump's tag is a str or None, not {type(tag).__name__}")
    problem = column_problem(tag)
    if problem is not None:
        raise ValueError(f"a brain dump's tag {problem}: {tag[:40]!r}")
