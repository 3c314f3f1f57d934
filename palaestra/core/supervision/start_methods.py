"""How child processes start: fork (the default), forkserver or spawn, and the ``auto`` rule.

Fork is fast, but a child forked from a parent that initialised CUDA cannot use CUDA
(``Cannot re-initialize CUDA in forked subprocess``). ``forkserver`` forks each child from a
fresh interpreter that imported palaestra's own modules (:func:`use`'s ``preload``) but no
plug-in; ``spawn`` starts each child as a fresh interpreter. Either way the child imports its
plug-in modules itself.

``auto`` (the runtime config's default, :func:`resolve`) picks fork unless CUDA is initialised
in this process once the plug-in modules are imported, and forkserver then, with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.context
import multiprocessing.util
import os
import signal
import sys
import tempfile
from collections.abc import Sequence

from palaestra.core.description.config import AUTO, FORK, FORKSERVER, SPAWN
from palaestra.core.files import socket_parent
from palaestra.core.supervision import undertaker

__all__ = [
    "AUTO",
    "CUDA_METHOD",
    "FORK",
    "FORKSERVER",
    "SPAWN",
    "context",
    "cuda_initialised",
    "helper_pids",
    "resolve",
    "resolve_quietly",
    "stop_fork_server",
    "use",
]  # (the start methods' names are the runtime config's)

LOG = logging.getLogger(__name__)

CUDA_METHOD = FORKSERVER
"""What ``auto`` picks where CUDA is initialised."""


def cuda_initialised() -> bool:
    """Whether this process has initialised CUDA through torch, so that a forked child could
    not use it; never imports torch (a process that did not import it has no CUDA of torch's).

    A process forked from one that had initialised CUDA counts too (torch calls it a "bad
    fork"): its own children cannot use CUDA either.
    """
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return False
    for probe in ("is_initialized", "_is_in_bad_fork"):
        check = getattr(cuda, probe, None)
        try:
            if callable(check) and check():
                return True
        except Exception:  # noqa: BLE001 - a broken torch must not stop the run here
            LOG.debug("torch.cuda.%s() failed", probe, exc_info=True)
    return False


def resolve(configured: str) -> str:
    """The start method to use for ``configured`` (one of :data:`START_METHODS`).

    ``auto`` is :data:`CUDA_METHOD` where :func:`cuda_initialised` (logged as a warning, once
    per call), else fork. Call it after the plug-in modules are imported.
    """
    method = resolve_quietly(configured)
    if configured != AUTO or method == FORK:
        return method
    LOG.warning(
        "CUDA is initialised in the executor (a plug-in module touched the GPU when it was "
        "imported, or the calling program did): the run's processes start by %s instead of "
        "fork, since a forked process cannot use CUDA. Set start_method: %s in the runtime "
        "config to choose this yourself (and silence this warning).",
        CUDA_METHOD,
        CUDA_METHOD,
    )
    return CUDA_METHOD


def resolve_quietly(configured: str) -> str:
    """:func:`resolve` without its warning (for a process that starts no run, say)."""
    if configured != AUTO:
        return configured
    return CUDA_METHOD if cuda_initialised() else FORK


def use(method: str, preload: Sequence[str] = ()) -> None:
    """Prepare ``method`` in this process before its first child starts.

    For forkserver, ``preload`` names the modules the server imports once: palaestra's own,
    never a plug-in's (one may touch CUDA). Only the first call before the server starts counts.
    The server's socket lies in :mod:`multiprocessing`'s temporary directory of this process
    (made in ``/tmp`` where the temporary directory is too deep for a socket's path: see
    :func:`~palaestra.core.files.socket_parent`), which the undertaker is told of, for a process
    killed before it removes it.
    """
    if method == FORKSERVER:
        multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
        undertaker.leave(_multiprocessing_temp_dir())


def _multiprocessing_temp_dir() -> str:
    """:mod:`multiprocessing`'s temporary directory of this process, made where its
    listener's socket (``listener-`` and 8 characters) fits a socket's address."""
    parent = socket_parent("pymp-", len("/listener-") + 8)
    if parent == tempfile.gettempdir():
        return multiprocessing.util.get_temp_dir()
    saved = tempfile.tempdir  # (it makes the directory in tempfile's: set for this call, made
    tempfile.tempdir = parent  # before the run's loop and its first child)
    try:
        return multiprocessing.util.get_temp_dir()
    finally:
        tempfile.tempdir = saved


Context = (
    multiprocessing.context.ForkContext
    | multiprocessing.context.ForkServerContext
    | multiprocessing.context.SpawnContext
)


def stop_fork_server() -> None:
    """End :mod:`multiprocessing`'s fork server of this process, if one runs.

    Called at the end of a run, whose processes have all ended: the server's children get the
    environment the server started with, so the next run must start one of its own (its
    ``experiment-record`` flag is another file). Ended by SIGTERM rather than by closing its
    pipe, which would wait for every process that inherited that pipe, a plug-in's stray too.
    """
    server = getattr(sys.modules.get("multiprocessing.forkserver"), "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    stop = getattr(server, "_stop", None)
    if pid is None or stop is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    stop()  # closes its pipe, reaps it and removes its socket


def context(method: str) -> Context:
    """:mod:`multiprocessing`'s context of ``method`` (fork, forkserver or spawn)."""
    if method == FORK:
        return multiprocessing.get_context("fork")
    if method == FORKSERVER:
        return multiprocessing.get_context("forkserver")
    if method == SPAWN:
        return multiprocessing.get_context("spawn")
    raise ValueError(f"not a start method: {method!r} (expected fork, forkserver or spawn)")


def helper_pids() -> set[int]:
    """The processes :mod:`multiprocessing` started here to serve forkserver and spawn: its
    fork server and its resource tracker.

    They are no plug-in's strays: each ends by itself once every process that holds its pipe
    (this one and the children started through it) has ended.
    """
    pids: set[int] = set()
    for module, holder, attribute in (
        ("multiprocessing.forkserver", "_forkserver", "_forkserver_pid"),
        ("multiprocessing.resource_tracker", "_resource_tracker", "_pid"),
    ):
        pid = getattr(getattr(sys.modules.get(module), holder, None), attribute, None)
        if isinstance(pid, int):
            pids.add(pid)
    return pids
