"""Entry point of a launched child (:mod:`palaestra.core.supervision.launch`): ``python -m
palaestra.core.supervision.remote_child``.

Reads the child's spec from stdin (its length, then the pickled
:class:`~palaestra.core.supervision.processes.ChildSpec`), then runs it as a forked child would
run, with stdin as its liveness pipe: when the process that launched it dies, stdin reads EOF and
this process ends at once, taking down what its plug-ins left running.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys

from aiomultiprocess.types import Unit

from palaestra.core.supervision import interrupts
from palaestra.core.supervision.console import guard_console
from palaestra.core.supervision.launch import HEADER
from palaestra.core.supervision.mainthread import guard_signal_calls
from palaestra.core.supervision.processes import ChildSpec, bootstrap
from palaestra.core.supervision.reaper import become_subreaper

EXIT_NO_SPEC = 70
"""Exit code when stdin closed before a whole spec arrived (the launcher died)."""


def _read_exactly(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            os._exit(EXIT_NO_SPEC)
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def main() -> None:
    interrupts.leave_to_executor()  # Ctrl-C (a closed terminal) is the executor's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    serve(0)


def serve(fd: int) -> None:
    """Read the spec from ``fd``, then run the child with ``fd`` as its liveness pipe (also
    for a child forked before its spec was known: see :mod:`.prestart`)."""
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    spec: ChildSpec = pickle.loads(_read_exactly(fd, size))
    # on another host the run's directory (its ipc endpoints) is made here; on its parent's,
    # it is there already
    os.makedirs(spec.run_dir, mode=0o700, exist_ok=True)
    multiprocessing.current_process().name = spec.name
    guard_console()
    guard_signal_calls(spec.name)
    become_subreaper()
    alive = multiprocessing.connection.Connection(os.dup(fd), writable=False)
    if fd == 0:
        sys.stdin.close()  # (and its fd)
    else:
        os.close(fd)
    from palaestra.core.supervision.runtime import child_main

    bootstrap(Unit(target=child_main, args=(spec, alive), kwargs={}, namespace=None))


if __name__ == "__main__":
    main()
