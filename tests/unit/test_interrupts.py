"""The command's record of SIGINT and SIGTERM (palaestra/core/supervision/interrupts.py): a
signal whose exception Python drops, or whose wake-up the event loop reads too late, is still
known, and a forked child starts without it. In this process, with its handlers restored after
each test."""

from __future__ import annotations

import asyncio
import ctypes
import os
import platform
import signal
import sys
from collections.abc import Iterator

import pytest

from palaestra.core.supervision import interrupts

SIGNALS = [
    pytest.param(signal.SIGINT, KeyboardInterrupt, id="SIGINT"),
    pytest.param(signal.SIGTERM, interrupts.Terminated, id="SIGTERM"),
]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(interrupts, "_received", None)
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)


class Dropping:
    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        signal.raise_signal(self.signum)


@pytest.mark.parametrize(("signum", "raised"), SIGNALS)
def test_a_signal_raised_where_python_drops_the_exception_is_recorded(
    signum: int, raised: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    dropped: list[BaseException | None] = []
    monkeypatch.setattr("sys.unraisablehook", lambda hook: dropped.append(hook.exc_value))
    interrupts.install()
    Dropping(signum)  # its __del__ runs the handler; Python hands the exception to the hook
    assert [type(exc) for exc in dropped] == [raised]
    assert interrupts.received() == signum
    with pytest.raises(raised):
        interrupts.raise_if_received()


def test_nothing_received_raises_nothing() -> None:
    interrupts.raise_if_received()
    assert interrupts.received() is None


def test_the_first_signal_is_the_one_kept() -> None:
    interrupts.note(signal.SIGTERM)
    interrupts.note(signal.SIGINT)
    assert interrupts.received() == signal.SIGTERM


@pytest.mark.parametrize(("signum", "raised"), SIGNALS)
def test_a_signal_the_loop_handles_is_recorded_before_the_loop_reads_it(
    signum: signal.Signals, raised: type[BaseException]
) -> None:
    """The record is there the moment the signal comes, before the loop dispatches it (a run
    that ends first never would); restore gives the signal its handler from before."""
    loop = asyncio.new_event_loop()
    called: list[int] = []
    try:
        previous = {signum: signal.getsignal(signum)}
        interrupts.add_handler(loop, signum, called.append)
        signal.raise_signal(signum)
        assert interrupts.received() == signum
        assert called == []
        loop.run_until_complete(_until(called))  # the loop reads its wake-up, then calls
        assert called == [signum]
        interrupts.restore(loop, previous)
        assert signal.getsignal(signum) is previous[signum]
    finally:
        loop.close()


async def _until(called: list[int]) -> None:
    for _ in range(100):
        if called:
            return
        await asyncio.sleep(0)


SA_RESTART = 0x10000000


def _flags(signum: int) -> int:
    """``sa_flags`` of ``signum``'s action (Linux x86-64 and aarch64: after the handler and
    the 128-byte mask)."""
    buffer = ctypes.create_string_buffer(256)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.sigaction(signum, None, buffer) == 0, ctypes.get_errno()
    return int.from_bytes(buffer.raw[136:140], sys.byteorder)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="sigaction layout")
def test_the_loops_handler_restarts_interrupted_system_calls_as_asyncios_own() -> None:
    """A signal to a process must not make a plug-in's blocking C call fail with EINTR:
    ``signal.signal`` alone drops the ``SA_RESTART`` that asyncio sets."""
    loop = asyncio.new_event_loop()
    try:
        previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM)}
        loop.add_signal_handler(signal.SIGTERM, lambda: None)
        assert _flags(signal.SIGTERM) & SA_RESTART  # (what asyncio alone sets)
        loop.remove_signal_handler(signal.SIGTERM)
        interrupts.add_handler(loop, signal.SIGTERM, lambda signum: None)
        assert _flags(signal.SIGTERM) & SA_RESTART
        interrupts.restore(loop, previous)
    finally:
        loop.close()


def test_a_signal_ignored_at_the_start_stays_ignored() -> None:
    """SIGINT of a shell script's background job is ignored: the command keeps it so."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupts.install()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is interrupts.raising


def test_a_forked_child_starts_without_its_parents_record() -> None:
    interrupts.note(signal.SIGTERM)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(0 if interrupts.received() is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert interrupts.received() == signal.SIGTERM
