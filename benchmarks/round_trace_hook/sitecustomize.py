"""Loaded by every process of a run that ``benchmarks/round_trace.py`` starts (this folder is on
its ``PYTHONPATH``; the run's processes are forked from the command, so they inherit it): each
message a per-step link sends or receives (:class:`palaestra.core.wire.channel.Channel`) is
noted, with the time, the thread's CPU time, the peer and the size, in a file of its process
under ``$PALAESTRA_ROUND_TRACE``. One ``write`` a message (a process of a run ends with
``os._exit``: nothing buffered would reach the file)."""

from __future__ import annotations

import os
import time

_DIR = os.environ.get("PALAESTRA_ROUND_TRACE")
_file = [-1, 0]  # the open file and the process it is of (a forked child opens its own)


def _note(kind: str, peer: str, size: int, at: float | None = None) -> None:
    """Note a message (``at``: when it was sent, if not now)."""
    now = time.perf_counter() if at is None else at
    pid = os.getpid()
    if _file[1] != pid:  # (its first message: the process's title first)
        _file[0] = os.open(f"{_DIR}/{pid}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _file[1] = pid
        with open("/proc/self/cmdline", "rb") as cmdline:
            title = cmdline.read().split(b"\0")[0].decode(errors="replace")
        os.write(_file[0], f"# {title}\n".encode())
    os.write(_file[0], f"{now:.7f} {kind} {peer} {size} {time.thread_time():.7f}\n".encode())


def _traced() -> None:
    from palaestra.core.wire.channel import Channel

    send, try_send, recv = Channel.send, Channel.try_send, Channel.recv

    def traced_send(self: Channel, data: bytes) -> None:
        _note("S", self.peer, len(data))
        send(self, data)

    def traced_try_send(self: Channel, data: bytes) -> bool:
        at = time.perf_counter()
        sent = try_send(self, data)
        if sent:
            _note("S", self.peer, len(data), at)
        return sent

    def traced_recv(self: Channel, ready: bool = False) -> bytes:
        data = recv(self, ready)
        _note("R", self.peer, len(data))
        return data

    Channel.send = traced_send  # type: ignore[method-assign]
    Channel.try_send = traced_try_send  # type: ignore[method-assign]
    Channel.recv = traced_recv  # type: ignore[method-assign]


if _DIR:
    _traced()
