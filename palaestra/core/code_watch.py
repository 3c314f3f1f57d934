"""Watching the source files of plug-in modules, and loading a changed module afresh.

Hot reload (``experiment-start --reload``, an agent's ``hot_reload: true``) watches only the
user's own files (never palaestra's, the standard library's or installed packages'). A module
is compiled from its source (never from a cached ``.pyc``, whose mtime check can miss an edit
made within the same second), executed into a fresh module object, and only put into
``sys.modules`` by :func:`install` once everything built from it worked: a file that fails to
compile or to execute leaves the old module as it was.

:class:`SourceWatch` runs on a process's per-step path: a clock read per step, and one
``os.stat`` per watched file at most every :data:`CHECK_INTERVAL` seconds.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import site
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

PALAESTRA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""palaestra's own package directory (with a trailing separator)."""
CHECK_INTERVAL = 0.25
"""Seconds between two looks at the watched files' ``stat``."""

Signature = tuple[int, int, int]
"""What tells a file changed: its mtime (ns), size and inode (an editor that saves by rename
makes a new inode)."""


@dataclass(frozen=True)
class WatchedFile:
    """The source file of one module."""

    module: str
    path: str


@functools.cache
def _never_watched() -> tuple[str, ...]:
    """Directories whose modules are never watched: palaestra's own, the standard library and
    the places installed packages live."""
    places = {PALAESTRA_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            places.add(path)
    with contextlib.suppress(AttributeError):  # a virtualenv's old site module
        places.update(site.getsitepackages())
    user = site.getusersitepackages()
    if isinstance(user, str):
        places.add(user)
    return tuple(os.path.realpath(p) + os.sep for p in places)


def source_of(cls: type) -> WatchedFile | None:
    """The source file of the module that defines ``cls``, if it is one to watch: a ``.py``
    file outside palaestra, the standard library and the installed packages; else None."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if module is None or not isinstance(path, str) or not path.endswith(".py"):
        return None
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return None
    if any(real.startswith(place) for place in _never_watched()):
        return None
    return WatchedFile(cls.__module__, path)


def signature(path: str) -> Signature | None:
    """The file's :data:`Signature`, or None if it cannot be read now (being replaced)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class SourceWatch:
    """Notices changes of a set of source files, looking at most every ``interval`` seconds.

    The per-step use is ``if clock() >= watch.next_check: watch.changed()``: a clock read and a
    comparison; :meth:`changed` stats the files and moves :attr:`next_check` on. A change is
    reported once the file has settled: when two looks in a row find the same new signature,
    so a file caught half-written (an editor or a copy still writing it) is not loaded; a
    change shows after one to two intervals.

    Args:
        files: The files to watch; their signatures now are the baseline.
        interval: Seconds between two looks.
        clock: The monotonic clock (a test passes its own).
    """

    def __init__(
        self,
        files: Iterable[WatchedFile],
        interval: float = CHECK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.files = {f.module: f for f in files}
        self.seen = {name: signature(f.path) for name, f in self.files.items()}
        self.settling: dict[str, Signature] = {}  # a new signature seen once, by module
        self.interval = interval
        self.clock = clock
        self.next_check = clock() + interval

    def __bool__(self) -> bool:
        return bool(self.files)

    def changed(self) -> list[WatchedFile]:
        """The files whose new signature the last look saw too (a file that cannot be read
        now is looked at again next time)."""
        self.next_check = self.clock() + self.interval
        found = []
        for name, watched in self.files.items():
            now = signature(watched.path)
            if now is None:
                continue
            if now == self.seen[name]:
                self.settling.pop(name, None)  # changed back, or never
            elif self.settling.get(name) == now:
                del self.settling[name]
                self.seen[name] = now
                found.append(watched)
            else:
                self.settling[name] = now
        return found


def load_fresh(watched: WatchedFile) -> ModuleType:
    """A new module object for ``watched.module``, executed from the file's current source.

    ``sys.modules`` is left as it was (see :func:`install`), but while the module body runs
    the new module is in it, as during an import (``dataclasses`` and ``typing`` look a
    class's module up there while the class is made).

    Raises:
        OSError: The file cannot be read.
        SyntaxError: It does not compile.
        Exception: Whatever its body raised.
    """
    spec = importlib.util.spec_from_file_location(watched.module, watched.path)
    if spec is None:  # not a path Python can load from (checked by source_of: a .py file)
        raise ImportError(f"cannot load {watched.module} from {watched.path}")
    module = importlib.util.module_from_spec(spec)
    with open(watched.path, "rb") as f:
        source = f.read()
    code = compile(source, watched.path, "exec", dont_inherit=True)
    old = sys.modules.get(watched.module)
    sys.modules[watched.module] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the user's own plug-in module, as import does
    finally:
        if old is not None:
            sys.modules[watched.module] = old
        else:
            sys.modules.pop(watched.module, None)
    return module


def install(module: ModuleType) -> None:
    """Make ``module`` the one ``import`` finds (also as its parent package's attribute), so
    that pickling its classes' instances finds the new classes."""
    name = module.__name__
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, module)


def class_in(module: ModuleType, qualname: str) -> type:
    """The class ``qualname`` (``Outer.Inner`` too) of ``module``.

    Raises:
        LookupError: The module defines no such class (any more).
    """
    found: object = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            break
    if not isinstance(found, type):
        raise LookupError(
            f"module '{module.__name__}' ({module.__file__}) no longer defines the class "
            f"'{qualname}'"
        )
    return found
