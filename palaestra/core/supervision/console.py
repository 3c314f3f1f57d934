"""A console that cannot fail a run: closed or broken stdin, stdout and stderr are survived.

A closed descriptor 1 (``>&-``: ``sys.stdout`` is None and the next file opened would take
descriptor 1), a pipe whose reader is gone (``| head -1``: ``BrokenPipeError``), a terminal that
hung up (``EIO``), a full disk or quota (``ENOSPC``, ``EDQUOT``, ``EFBIG``) or a character the
console's encoding lacks (``UnicodeEncodeError``) may not change the outcome of a run, which is
told by the exit code and the store. :func:`guard_console` puts ``/dev/null`` on closed
descriptors 0 to 2, and gives ``sys.stdout`` and ``sys.stderr`` a writer that, once its reader
is gone or its file full, sends the rest of the output to ``/dev/null`` instead of raising, and
writes a character its encoding lacks as its escape (``\\xfc``). Children forked afterwards
inherit both. Where the output is the command's product (not a run's log), a full file fails
the command as it ends (:func:`output_lost`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


_GONE = (errno.EPIPE, errno.EBADF, errno.EIO)
"""A write's errors that say the console's reader is gone: a pipe's, a closed descriptor's, a
hung-up terminal's."""

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""A write's errors that say the console's file is full: its disk, the user's quota, the size
limit (``ulimit -f``)."""


class _Tolerant(io.RawIOBase):
    """Writes to a descriptor; once the reader is gone, to ``/dev/null`` without complaint."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer, /) -> int:
        try:
            return os.write(self._fd, data)
        except OSError as exc:
            if exc.errno not in _GONE and exc.errno not in _FULL:
                raise
            _null_onto(self._fd)  # the console is gone: the run goes on without it
            if exc.errno in _FULL and self._fd == 1:
                global _lost
                _lost = _lost or f"standard output: {exc.strerror}"
                if _a_log:  # (said where it may still be read)
                    _tell(f"palaestra: {_lost}; the rest is dropped\n")
            return memoryview(data).nbytes


_lost: str | None = None
"""Why the rest of the standard output was dropped (its file is full), if it was."""
_a_log = False
"""Whether the standard output tells how a run goes, and is not the command's product."""


def output_is_a_log() -> None:
    """The command's standard output tells how a run goes (its progress, its summary); the
    outcome is the exit code and the store, so a full file under it does not change them."""
    global _a_log
    _a_log = True


def output_lost() -> str | None:
    """Why the command's product, its standard output, was cut short (its file is full), or
    None: then the command must not end as if it had written it."""
    return None if _a_log else _lost


def guard_console() -> None:
    """Make descriptors 0 to 2 valid and stdout/stderr immune to a closed or broken console.

    Idempotent; call it first thing in a process (the CLI, each child).
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            _null_onto(fd)
    sys.stdout = _tolerant(sys.stdout, 1, write_through=False)
    sys.stderr = _tolerant(sys.stderr, 2, write_through=True)


def _tolerant(stream: TextIO | None, fd: int, *, write_through: bool) -> TextIO:
    buffer = getattr(stream, "buffer", None)
    if isinstance(getattr(buffer, "raw", None), _Tolerant):
        return stream  # type: ignore[return-value]  # guarded already
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.flush()
    return io.TextIOWrapper(
        io.BufferedWriter(_Tolerant(fd)),
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors=_never_strict(getattr(stream, "errors", None)),
        line_buffering=bool(getattr(stream, "line_buffering", True)),
        write_through=write_through,
    )


def _never_strict(errors: str | None) -> str:
    """A stream's error handler, except that a character its encoding lacks (a locale's
    latin-1 or ASCII, ``PYTHONIOENCODING``) is written as its escape, ``\\xfc``, instead of
    failing the command (with the run over, at its summary): as Python writes stderr."""
    return "backslashreplace" if errors in (None, "strict") else errors


def _tell(text: str) -> None:
    """Write ``text`` to standard error if it can be (it may be full, or gone, too)."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode())


def _null_onto(fd: int) -> None:
    """Put ``/dev/null`` on descriptor ``fd`` (open or closed)."""
    null = os.open(os.devnull, os.O_RDWR)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
