"""Paths inside a run's private directory (its sockets, links and liveness marks)."""

from __future__ import annotations

import hashlib
import os
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MAX_IPC_PATH = 100  # sockaddr_un allows 107 bytes; keep a margin


def file_for(run_dir: str, name: str, suffix: str) -> str:
    """A unique path for ``name`` inside ``run_dir``, ending in ``suffix``, short enough for a
    socket's address."""
    safe = _UNSAFE.sub("_", name)
    path = os.path.join(run_dir, f"{safe}{suffix}")
    if safe != name or len(path) > _MAX_IPC_PATH:  # keep distinct names distinct
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        path = os.path.join(run_dir, f"{safe[:24]}-{digest}{suffix}")
    return path
