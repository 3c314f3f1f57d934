"""How a wait on the per-step links spins before it sleeps (palaestra.core.wire.channel's
Poller), in one process over a real socket pair."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from palaestra.core.wire import channel
from palaestra.core.wire.channel import CHAIN_SPINS, CONTENDED_WAITS, SPINS_JUDGED, Poller

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    yield a, b
    a.close()
    b.close()


def late(poller: Poller) -> None:
    """Make what is there seen only by a wait of ``poller`` that sleeps (a peer still at
    work): a spin finds nothing."""
    poll = poller.poll

    class Late:
        def poll(self, timeout: int | None = None) -> list[tuple[int, int]]:
            return [] if timeout == 0 else poll.poll(timeout)

    poller.poll = Late()  # type: ignore[assignment]


def test_a_message_there_is_returned_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=10.0)  # (a spin would never end)
    a.send(b"x")
    assert poller.wait() == [(b.fileno(), select.POLLIN)]


def test_a_message_that_comes_while_it_spins_is_met_awake(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=10.0)
    sleeps = []
    poll = poller.poll

    class Watched:  # the poll set, noting each wait that could sleep (a timeout other than 0)
        def poll(self, timeout: int | None = None) -> list[tuple[int, int]]:
            if timeout != 0:
                sleeps.append(timeout)
            return poll.poll(timeout)

    poller.poll = Watched()  # type: ignore[assignment]
    sender = threading.Thread(target=a.send, args=(b"x",))
    sender.start()
    assert poller.wait() == [(b.fileno(), select.POLLIN)]
    sender.join()
    assert sleeps == []  # it never slept: the spin met the message
    assert poller.short


def test_a_long_wait_stops_the_spin_and_a_short_one_brings_it_back(
    pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=1e-4)
    late(poller)
    a.send(b"x")
    assert poller.wait() == [(b.fileno(), select.POLLIN)]  # spun its whole time, then slept
    assert not poller.short and poller.spins == 1  # longer than a spin: no spin next time
    b.recv(10)
    a.send(b"y")
    # the next wait sleeps at once; what came, came (by the clock) within a tenth of a spin
    times = iter([0.0, 1e-5])
    monkeypatch.setattr(channel, "_clock", lambda: next(times))
    assert poller.wait() == [(b.fileno(), select.POLLIN)]
    assert poller.short and poller.spins == 1  # (it did not spin): spin again next time


@pytest.mark.parametrize(("worked", "window"), [(0.5, CHAIN_SPINS), (2.0, 1)])
def test_a_wait_after_brief_work_spins_longer(
    pair: tuple[socket.socket, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
    worked: float,
    window: int,
) -> None:
    """A process that worked at most a spin's time since its last wait is a link of a chain
    (one game's step: environment, Muscle, Brain, Muscle, environment, each brief, each waiting
    for the others): its wait spins :data:`CHAIN_SPINS` times as long, and a wait that long
    is short. After longer work, one spin's time. (The clock moves a tenth of a spin at each
    reading.)"""
    a, b = pair
    spin = 1e-4
    now = [1.0]

    def clock() -> float:
        now[0] += spin / 10
        return now[0]

    monkeypatch.setattr(channel, "_clock", clock)
    poller = Poller([(b.fileno(), select.POLLIN)], spin=spin)
    late(poller)
    a.send(b"x")
    monkeypatch.setattr(channel, "_ended", now[0] - worked * spin)
    assert poller.wait() == [(b.fileno(), select.POLLIN)]  # spun its whole time, then slept
    assert poller.budget == pytest.approx(window * spin)
    assert channel._ended == now[0]  # (the next wait, on any link, measures the work from here)
    # a wait that sleeps at once (it did not spin) and took three spins' time
    times = iter([now[0] + worked * spin, now[0] + (worked + 3) * spin])
    monkeypatch.setattr(channel, "_clock", lambda: next(times))
    poller.short = False
    assert poller.wait() == [(b.fileno(), select.POLLIN)]
    assert poller.short == (window == CHAIN_SPINS)  # within the chain's window: spin again


def test_no_spin_sleeps_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    _, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=0.0)
    assert not poller.short
    assert poller.wait(timeout=1) == []
    assert not poller.short and poller.spins == 0


@pytest.mark.parametrize(("tick", "skips"), [(3.0, CONTENDED_WAITS), (0.5, 0)])
def test_spins_that_ended_late_stop_for_a_while(
    pair: tuple[socket.socket, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
    tick: float,
    skips: int,
) -> None:
    """How long the spins took decides. Spins that ended late, each more than twice its time
    (it yielded the CPU to a process that kept it: the CPUs are busy with long work), stop
    spinning for the next waits; spins that ended on time let it go on. The clock moves
    ``tick`` spins at each reading."""
    _, b = pair
    spin = 1e-4
    now = [0.0]

    def clock() -> float:
        now[0] += tick * spin
        return now[0]

    monkeypatch.setattr(channel, "_clock", clock)
    poller = Poller([(b.fileno(), select.POLLIN)], spin=spin)
    for _ in range(SPINS_JUDGED):
        poller.short = True  # (each wait spins)
        poller.wait(timeout=1)
    assert poller.skip == skips
    assert poller.spins == 0  # judged, and counted anew
    if skips:
        poller.short = True
        poller.wait(timeout=1)
        assert poller.skip == skips - 1 and poller.spins == 0  # it slept at once


@pytest.mark.parametrize(("yields", "skips"), [(3, CONTENDED_WAITS), (1, 0)])
def test_spins_that_waited_longer_than_the_window_stop_for_a_while(
    pair: tuple[socket.socket, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
    yields: int,
    skips: int,
) -> None:
    """Spins of a chain's longer window whose message came, but after more than the process's
    own window on average (the Brain's next round while the Muscle plays 32 games: hundreds
    of µs), stop spinning for the next waits: a wake-up costs less. Spins whose message came
    within the window go on (one game's chain). Each yield moves the clock 0.6 windows on;
    the message comes at yield ``yields``."""
    a, b = pair
    spin = 1e-4
    now = [0.0]
    count = [0]

    def yielded() -> None:
        now[0] += 0.6 * spin
        count[0] += 1
        if count[0] == yields:
            a.send(b"x")

    monkeypatch.setattr(channel, "_clock", lambda: now[0])
    monkeypatch.setattr(channel, "_yield", yielded)
    monkeypatch.setattr(channel, "_ended", 0.0)  # (each wait follows brief work: a chain's)
    poller = Poller([(b.fileno(), select.POLLIN)], spin=spin)
    for _ in range(SPINS_JUDGED):
        count[0] = 0
        poller.short = True  # (each wait spins)
        assert poller.wait() != []
        b.recv(1)
        channel._ended = now[0]
    assert poller.skip == skips
    assert poller.spins == 0  # judged, and counted anew


def test_spinning_reaches_this_process_and_those_it_starts_while_it_lasts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(channel.LINK_SPIN_VAR, raising=False)
    monkeypatch.delenv("PALAESTRA_SPIN_US", raising=False)
    before = channel.SPIN_SECONDS
    code = "from palaestra.core.wire import channel; print(channel.SPIN_SECONDS)"
    with channel.spinning(50.0):
        assert channel.SPIN_SECONDS == pytest.approx(5e-5)
        assert Poller([]).spin == pytest.approx(5e-5)
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert float(out.stdout) == pytest.approx(5e-5)
    assert channel.SPIN_SECONDS == before  # as before, and the variable gone again
    assert channel.LINK_SPIN_VAR not in os.environ
    assert "PALAESTRA_SPIN_US" not in os.environ  # (the config's override is never set)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("50", 5e-5),
        ("x", 2e-4),
        ("-3", 2e-4),
        ("20000", 2e-4),
        ("nan", 2e-4),
        ("inf", 2e-4),
        (None, 2e-4),
    ],
)
def test_the_spin_a_process_starts_with(value: str | None, seconds: float) -> None:
    assert channel.spin_seconds(value) == pytest.approx(seconds)


def test_a_timeout_bounds_the_spin(pair: tuple[socket.socket, socket.socket]) -> None:
    _, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=10.0)
    began = time.monotonic()
    assert poller.wait(timeout=30) == []
    assert time.monotonic() - began < 5.0  # (30 ms, not the 10 s spin)


@pytest.mark.parametrize("spin", [0.0, 1e-4])
def test_a_negative_timeout_waits_as_none_does(
    pair: tuple[socket.socket, socket.socket], spin: float
) -> None:
    _, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=spin)
    slept = []

    class Watched:  # nothing is there until it sleeps; it notes how long it would
        def poll(self, timeout: int | None = None) -> list[tuple[int, int]]:
            if timeout == 0:
                return []
            slept.append(timeout)
            return [(b.fileno(), select.POLLIN)]

    poller.poll = Watched()  # type: ignore[assignment]
    assert poller.wait(timeout=-1) == [(b.fileno(), select.POLLIN)]
    assert slept == [None]  # until something comes, not at once


def test_a_wait_that_timed_out_stops_the_spin(pair: tuple[socket.socket, socket.socket]) -> None:
    """A timeout shorter than the spin ends the spin with nothing: not a short wait, so the
    next wait sleeps at once (an idle process that waits with a timeout does not spin on)."""
    _, b = pair
    poller = Poller([(b.fileno(), select.POLLIN)], spin=5.0)
    assert poller.wait(timeout=2) == []
    assert not poller.short


@pytest.mark.parametrize("what", ["stop", "hang-up"])
def test_a_stop_or_a_hang_up_ends_a_spin(
    pair: tuple[socket.socket, socket.socket], what: str
) -> None:
    a, b = pair
    stop_fd, stop_writer = os.pipe()
    try:
        poller = Poller([(b.fileno(), select.POLLIN), (stop_fd, select.POLLIN)], spin=10.0)
        act = (lambda: os.write(stop_writer, b"s")) if what == "stop" else a.close
        threading.Thread(target=act).start()
        events = dict(poller.wait())
        if what == "stop":
            assert events == {stop_fd: select.POLLIN}
        else:
            assert events[b.fileno()] & select.POLLHUP
    finally:
        os.close(stop_fd)
        os.close(stop_writer)
