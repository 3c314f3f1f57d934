"""Hot reload of an agent's code: new Muscle, Objective and Brain instances from changed files.

With ``experiment-start --reload`` (or ``hot_reload: true`` on an agent) each Muscle process
watches the source files of its Muscle's and its Objective's modules, and the Brain process
that of its Brain's module (only the user's own files: see
:func:`palaestra.core.code_watch.source_of`). When one changes, the process loads the module
afresh, builds new instances of the plug-in classes with the same params and context, hands
them the old instances' state, and goes on with them: a Muscle process between two steps (it
also evaluates the Objective), the Brain process between two ``thinking`` calls.

What carries over:

- Brain: its state through its own dump: the old instance's :meth:`~Brain.store` is called
  (its dumps are captured, not stored), and the new one starts as a phase does, with
  :meth:`~Brain.load` (only if the old one stored something; ``try_load_brain_dump`` if the
  class overrides it) and then :meth:`~Brain.setup`. Its :attr:`~Brain.memory` (the same
  object), its context (name, seed, sensors as its filters set them, the dump writer) and a
  mode assigned to it carry over as they are. What ``store`` does not save is lost.
- Muscle: its context (the same, with the same random generator, which goes on where it was)
  and an evaluation's test mode; then :meth:`~Muscle.setup`, in a test phase
  :meth:`~Muscle.prepare_model` (loading the agent's brain dumps again), and the newest update
  the Brain sent this Muscle, applied again with :meth:`~Muscle.update` (a Brain whose updates
  are increments, not a whole policy, should keep sending whole ones). The memory the
  Objective reads belongs to the process and stays.
- Objective: a new instance with the same params (it has no state of its own to hand over).

Each changed module is reloaded on its own (a Muscle's and an Objective's in two files: one
may take while the other fails), and the plug-ins of its classes are all built before any is
swapped: a module that fails to compile or to run, a class that is gone, or an exception in a
constructor, ``store``, ``load``, ``setup``, ``prepare_model`` or ``update`` keeps its old
instances (and its old module) running, logs the traceback once and records the failure; it
is tried again only when its file changes again (not when another watched file does). After
a swap the old Muscle's or Brain's ``teardown()`` is called (a
failure there is logged, the new code keeps running). Each attempt becomes a ``code_reloads``
row per plug-in rebuilt, sent to the store at once.

The per-step cost with hot reload on is a clock read and a comparison (the files are stat-ed
every :data:`~palaestra.core.code_watch.CHECK_INTERVAL` seconds, and a change is acted on once
two looks in a row found the file the same, so within about half a second); with it off, a
None check. The processes call their reload themselves and swap the new instances into their
own fields (this module builds them and never sees a process).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from palaestra.agent.brain import Brain
from palaestra.agent.context import BrainDumps
from palaestra.agent.muscle import Muscle
from palaestra.core.code_watch import (
    CHECK_INTERVAL,
    PALAESTRA_DIR,
    SourceWatch,
    WatchedFile,
    class_in,
    install,
    load_fresh,
    source_of,
)
from palaestra.core.description.loading import load_class
from palaestra.core.description.name_rules import dump_key
from palaestra.core.plugin import PluginError, call
from palaestra.core.wire import messages as m

if TYPE_CHECKING:
    from palaestra.agent.plugin_rows import PluginRows
    from palaestra.core.description.specs import AgentSpec

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """One plug-in's part in a reload attempt."""

    kind: str  # "muscle", "objective" or "brain"
    watched: WatchedFile
    ok: bool
    error: str | None
    at: float


class HotReload:
    """Watches the modules of one process's plug-ins and swaps in instances of their new code.

    Made before the process builds its plug-ins, it first loads their watched modules afresh
    from their files: the process is forked from the executor, whose modules are those it
    imported when the run began, and an earlier phase of the run may have reloaded newer code.
    A module that fails to load then is reported like a failed reload (logged, and recorded
    at the first step), and the process builds its plug-ins from the executor's version.

    Args:
        owner: The process name, for log lines.
        agent: The agent's name (the rows' source is ``<kind>:<agent>``).
        plugins: The run file's class names (``module:Class``) of the plug-ins by kind
            (``muscle``, ``objective``, ``brain``); those whose module is not watched
            (palaestra's, installed packages') are left out.
        interval: Seconds between two looks at the files.
        clock: The monotonic clock.
    """

    def __init__(
        self,
        owner: str,
        agent: str,
        plugins: Mapping[str, str],
        interval: float = CHECK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.owner = owner
        self.agent = agent
        self.rebuild: Callable[[dict[str, type]], None] = _nothing_to_rebuild
        """Called with the new classes by kind: builds new instances and hands them the old
        ones' state, then swaps them in; raises (swapping nothing) if any step fails."""
        self.kinds: dict[str, tuple[WatchedFile, str]] = {}  # kind: (its file, class qualname)
        for kind, name in plugins.items():
            cls = load_class(name)
            watched = source_of(cls)
            if watched is not None:
                self.kinds[kind] = (watched, cls.__qualname__)
        files = {watched.module: watched for watched, _ in self.kinds.values()}
        self.watch = SourceWatch(files.values(), interval, clock)
        self.started = self._start(list(files.values()))  # reported at the first check
        if self.started:
            self.watch.next_check = 0.0

    def _start(self, files: list[WatchedFile]) -> list[Outcome]:
        """Load ``files`` afresh and install them; the outcomes of those that failed."""
        failed: list[Outcome] = []
        for watched in files:
            kinds = [(k, name) for k, (w, name) in self.kinds.items() if w == watched]
            try:
                module = load_fresh(watched)
                for _, name in kinds:
                    class_in(module, name)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: reported
                error = user_traceback(exc)
                LOG.error(
                    "%s: hot reload: %s fails to load, so this process starts with the version "
                    "the run loaded before (tried again when the file changes again):\n%s",
                    self.owner,
                    watched.path,
                    error,
                )
                failed.extend(Outcome(k, watched, False, error, time.time()) for k, _ in kinds)
            else:
                install(module)
        return failed

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def plugin_class(self, kind: str, name: str) -> type:
        """The class the process builds its ``kind`` plug-in (``name`` in the run file) from:
        that of the watched module as :meth:`_start` left it (the one loaded afresh, or the
        run's where that failed), else ``load_class(name)``. Not ``load_class`` for a watched
        one: a class the run file names through a package that re-exports it
        (``my_agents:PPOBrain``, its ``__init__`` importing it from ``my_agents.ppo``) would
        be the package's, the run's older version, whose instances cannot be pickled once the
        fresh module is installed (Python finds another class of that name there)."""
        watched = self.kinds.get(kind)
        if watched is None:
            return load_class(name)
        return class_in(sys.modules[watched[0].module], watched[1])

    def describe(self) -> str:
        return ", ".join(f"{kind} {w.path}" for kind, (w, _) in self.kinds.items())

    def due(self) -> bool:
        """Whether the files are to be looked at now (a clock read and a comparison)."""
        return self.watch.clock() >= self.watch.next_check

    def check(self) -> list[Outcome]:
        """Look at the files; reload each that changed, on its own (see the module's
        docstring). The outcomes, one per plug-in rebuilt (none if nothing changed; the first
        time, also those of the modules that failed to load at the start)."""
        outcomes, self.started = self.started, []
        for watched in self.watch.changed():
            outcomes += self._reload(watched)
        return outcomes

    def _reload(self, watched: WatchedFile) -> list[Outcome]:
        """Load ``watched`` afresh, rebuild the plug-ins of its classes and install it; their
        outcomes (a failure keeps its old module and instances: another module's reload does
        not try it again, its own file's next change does)."""
        kinds = {k: name for k, (w, name) in self.kinds.items() if w == watched}
        try:
            module = load_fresh(watched)
            self.rebuild({k: class_in(module, name) for k, name in kinds.items()})
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: reported, kept
            error = user_traceback(exc)
            LOG.error(
                "%s: hot reload of %s failed; the old code keeps running (tried again when the "
                "file changes again):\n%s",
                self.owner,
                watched.path,
                error,
            )
            at = time.time()
            return [Outcome(k, watched, False, error, at) for k in kinds]
        install(module)
        LOG.info("%s: reloaded %s (%s)", self.owner, watched.path, ", ".join(kinds))
        at = time.time()
        return [Outcome(k, watched, True, None, at) for k in kinds]

    def rows(
        self, outcomes: list[Outcome], worker: int, episode: int, step: int
    ) -> list[m.CodeReloadRow]:
        return [
            m.CodeReloadRow(
                f"{o.kind}:{self.agent}",
                worker,
                episode,
                step,
                o.watched.module,
                o.watched.path,
                o.ok,
                o.error,
                o.at,
            )
            for o in outcomes
        ]


def plugin_class(reload: HotReload | None, kind: str, name: str) -> type:
    """The class to build the ``kind`` plug-in named ``name`` from: with hot reload, that of
    its watched module (see :meth:`HotReload.plugin_class`), else ``load_class(name)``."""
    return load_class(name) if reload is None else reload.plugin_class(kind, name)


def _nothing_to_rebuild(classes: dict[str, type]) -> None:
    raise RuntimeError("hot reload: no process to rebuild plug-ins in (a bug of palaestra)")


def watching(owner: str, reload: HotReload | None, agent: AgentSpec, brain: bool) -> bool:
    """Whether ``reload`` has anything to watch (said once, for information); if not, say so:
    once per agent and phase as a warning (from the Brain process) if none of the agent's
    plug-ins can be reloaded, else for information."""
    if reload:
        LOG.info("%s: hot reload watches %s", owner, reload.describe())
        return True
    names = (agent.brain.name, agent.muscle.name, agent.objective.name)
    none = all(source_of(load_class(name)) is None for name in names)
    LOG.log(
        logging.WARNING if brain and none else logging.INFO,
        "%s: hot reload of agent '%s' watches nothing here: %s from palaestra or installed "
        "packages, whose modules are never reloaded",
        owner,
        agent.name,
        "its plug-ins come" if none else "this process's plug-ins come",
    )
    return False


# --- the Muscle process ----------------------------------------------------------------------


def rebuilt_muscle(
    agent: AgentSpec,
    classes: dict[str, type],
    old: Muscle,
    objective: Any,
    mode: str,
    last_update: bytes | None,
) -> tuple[Muscle, Any]:
    """New instances of the Muscle and the Objective of ``agent`` whose classes are in
    ``classes`` (the others as they were), built and set up as the running ones were: the
    Muscle gets the old one's context, an evaluation's test mode, the memory of its own,
    ``setup``, in a test ``mode`` ``prepare_model`` and the Brain's ``last_update`` (pickled)
    again. Nothing is swapped here: the process swaps them when all were built (see
    :meth:`HotReload.check`)."""
    if "objective" in classes:
        objective = call(classes["objective"], **agent.objective.params)
    muscle = old
    if "muscle" in classes:
        muscle = call(classes["muscle"], **agent.muscle.params)
        if not isinstance(muscle, Muscle):
            raise TypeError(f"{classes['muscle'].__qualname__} is no longer a Muscle")
        muscle.attach(old.context)
        if "_palaestra_mode" in old.__dict__:  # an evaluation's test mode
            muscle.__dict__["_palaestra_mode"] = old.__dict__["_palaestra_mode"]
        if "_palaestra_memory" in old.__dict__:  # the rows it kept in its own memory
            muscle._memory = old.memory
        call(muscle.setup)
        if mode == "test":
            call(muscle.prepare_model)
        if last_update is not None:
            call(muscle.update, pickle.loads(last_update))
    return muscle, objective


# --- the Brain process -----------------------------------------------------------------------


def rebuilt_brain(cls: type, old: Brain, owner: str, params: Mapping[str, Any]) -> Brain:
    """A new instance of ``cls`` (with ``params``) in place of ``old``: its state through
    ``old``'s dump, its memory, context and mode, then ``load`` and ``setup`` (see the
    module's docstring). Nothing is swapped here: the process (``owner``) swaps it."""
    state = _dumped(old, owner)
    brain = call(cls, **params)
    if not isinstance(brain, Brain):
        raise TypeError(f"{cls.__qualname__} is no longer a Brain")
    context = old.context
    brain.attach(
        dataclasses.replace(
            context,
            dumps=BrainDumps(
                loaded=state,
                write=context.dumps.write,
                source="the same Brain before its code was reloaded",
                owner=owner,
            ),
        )
    )
    brain._memory = old.memory
    if "_palaestra_mode" in old.__dict__:
        brain.__dict__["_palaestra_mode"] = old.__dict__["_palaestra_mode"]
    if type(brain).try_load_brain_dump is not Brain.try_load_brain_dump:
        call(brain.try_load_brain_dump)
    elif state:
        call(brain.load)
    call(brain.setup)
    return brain


def _dumped(brain: Brain, owner: str) -> dict[str, bytes]:
    """What ``brain.store()`` dumps, by :func:`dump_key`, captured instead of stored."""
    captured: dict[str, bytes] = {}

    def capture(data: bytes, tag: str) -> None:
        captured[dump_key(tag)] = data

    context = brain.context
    brain.attach(dataclasses.replace(context, dumps=BrainDumps(write=capture, owner=owner)))
    try:
        call(brain.store)
    finally:
        brain.attach(context)
    return captured


# --- both ------------------------------------------------------------------------------------


def retire(owner: str, old: Muscle | Brain, out: PluginRows) -> None:
    """Call the replaced instance's ``teardown()`` and store what it added with
    ``add_statistics`` there (``out``: the process's rows, at step -1 as ``store()``'s; it
    was dropped); a failure is logged (the new code runs)."""
    try:
        call(old.teardown)
        out.add(old, -1, -1, -1)
    except PluginError as exc:
        LOG.warning(
            "%s: teardown() of the instance replaced by hot reload failed:\n%s",
            owner,
            user_traceback(exc),
        )


def user_traceback(exc: BaseException) -> str:
    """The traceback of the user's code that failed, without palaestra's frames: for a
    :class:`PluginError`, which method it was and what it raised; a ``SyntaxError`` as Python
    shows it (file, line, caret)."""
    header = ""
    if isinstance(exc, PluginError) and exc.__cause__ is not None:
        header = f"{exc.plugin} raised:\n"
        exc = exc.__cause__
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not os.path.abspath(frame.filename).startswith(PALAESTRA_DIR)
    ]
    lines = (
        ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    )
    return (header + "".join(lines + traceback.format_exception_only(exc))).rstrip()
