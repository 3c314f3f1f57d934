"""torch.cuda's state, without a GPU: ``init()`` initialises "CUDA" in this process; a process
forked from one that had initialised it is in a "bad fork", where ``init()`` raises the error
real torch raises there. :func:`palaestra.core.supervision.start_methods.cuda_initialised` reads
``is_initialized()`` and ``_is_in_bad_fork()``, as it does on real torch.
"""

from __future__ import annotations

import os

_initialized = False
_in_bad_fork = False


def _after_fork_in_child() -> None:
    global _initialized, _in_bad_fork
    if _initialized:
        _initialized = False
        _in_bad_fork = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def init() -> None:
    """Initialise "CUDA" here (what ``torch.zeros(1, device="cuda")`` does first)."""
    global _initialized
    if _in_bad_fork:
        raise RuntimeError(
            "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method"
        )
    _initialized = True


def is_initialized() -> bool:
    return _initialized


def _is_in_bad_fork() -> bool:
    return _in_bad_fork


def is_available() -> bool:
    return True
