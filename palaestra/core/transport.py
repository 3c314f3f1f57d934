"""Where sockets live: private ipc endpoints in a per-run directory only the user can enter.

Everything of a run binds to ``ipc://`` paths inside a directory created with mode 0700, so no
other user on the host can connect, and the pickled user payloads on the Muscle <-> Brain path
are only reachable by the run's own processes. Nothing binds a TCP port.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MAX_IPC_PATH = 100  # sockaddr_un allows 107 bytes; keep a margin


def make_run_dir() -> str:
    """Create the private directory for one run's endpoints (mode 0700)."""
    return tempfile.mkdtemp(prefix="palaestra-")


def remove_run_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def endpoint_for(run_dir: str, name: str) -> str:
    """A unique ``ipc://`` endpoint for ``name`` inside ``run_dir``, short enough for a socket."""
    safe = _UNSAFE.sub("_", name)
    path = os.path.join(run_dir, f"{safe}.sock")
    if safe != name or len(path) > _MAX_IPC_PATH:  # keep distinct names distinct
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        path = os.path.join(run_dir, f"{safe[:24]}-{digest}.sock")
    return f"ipc://{path}"


def link_for(endpoint: str) -> str:
    """The endpoint of the per-step link (:mod:`palaestra.core.channel`) beside ``endpoint``."""
    return endpoint.removesuffix(".sock") + ".link"
