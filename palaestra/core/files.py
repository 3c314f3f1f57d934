"""Paths inside a run's private directory (its sockets, links and liveness marks)."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
SOCKET_PATH_MAX = 107
"""The longest path a Unix socket's address holds (``sockaddr_un``'s, less its NUL)."""
_MAX_IPC_PATH = SOCKET_PATH_MAX - 7  # (a margin)
LONGEST_NAME = 1 + 24 + 1 + 16 + len(".marks")
"""The longest name below a run's directory that :func:`file_for` makes, with its ``/``."""
SHORT_TEMP_DIRS = ("/tmp", "/var/tmp")
"""Where a directory of sockets goes when the temporary directory's paths are too long."""
_RANDOM = 8
"""The length of the random part of a name ``tempfile`` makes."""


def socket_parent(prefix: str, longest: int) -> str:
    """The directory to make a private directory of sockets in (``tempfile.mkdtemp`` with
    ``prefix``), whose longest path below that directory is ``longest`` characters (with its
    ``/``): the temporary directory (``TMPDIR``), unless the sockets' paths would not fit a
    socket's address there (a ``TMPDIR`` deep in a home or a job's scratch directory); then the
    first of :data:`SHORT_TEMP_DIRS` that is a writable directory, as :mod:`multiprocessing`
    does from Python 3.13 (else the temporary directory all the same: the socket's bind fails,
    naming its path)."""
    below = 1 + len(prefix) + _RANDOM + longest
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + below <= SOCKET_PATH_MAX:  # (the limit is in bytes)
        return base
    for short in SHORT_TEMP_DIRS:
        if len(short) + below <= SOCKET_PATH_MAX and os.access(short, os.W_OK | os.X_OK):
            return short
    return base


def file_for(run_dir: str, name: str, suffix: str) -> str:
    """A unique path for ``name`` inside ``run_dir``, ending in ``suffix``, short enough for a
    socket's address."""
    safe = _UNSAFE.sub("_", name)
    path = os.path.join(run_dir, f"{safe}{suffix}")
    if safe != name or len(path) > _MAX_IPC_PATH:  # keep distinct names distinct
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        path = os.path.join(run_dir, f"{safe[:24]}-{digest}{suffix}")
    return path
