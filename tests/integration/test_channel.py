"""The per-step links (palaestra.core.wire.channel) between real processes over real Unix
sockets."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from palaestra.core.wire.channel import (
    CHUNK,
    Channel,
    Listener,
    PeerGone,
    Selector,
    connect,
)
from palaestra.core.wire.transport import endpoint_for, link_for, make_run_dir, remove_run_dir

pytestmark = pytest.mark.timeout(30)

SIZES = [0, 1, 76, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 3]


class Stop(Exception):
    pass


class StopPipe:
    """What a hot loop gives a channel: a fd to watch and what to do when it is readable."""

    def __init__(self) -> None:
        self.fd, self.writer = os.pipe()

    def check(self) -> None:
        raise Stop

    def trigger(self) -> None:
        os.write(self.writer, b"s")


@pytest.fixture
def endpoint() -> Iterator[str]:
    run_dir = make_run_dir()
    try:
        yield link_for(endpoint_for(run_dir, "Environment-board-0-env"))
    finally:
        remove_run_dir(run_dir)


Link = tuple[StopPipe, Channel, Channel]
"""A stop pipe and the two ends of a link: the one that connected and the one accepted."""


@pytest.fixture
def link(endpoint: str) -> Iterator[Link]:
    stop = StopPipe()
    listener = Listener(endpoint)
    near = connect(endpoint, "Muscle-one-0", stop.fd, stop.check, "Brain-one")
    far = listener.accept(stop.fd, stop.check)
    assert far is not None
    try:
        yield stop, near, far
    finally:
        for item in (near, far, listener):
            item.close()


def fork(body: object) -> int:
    pid = os.fork()
    if pid == 0:  # the child: run, then leave without running the parent's cleanup
        code = 0
        try:
            body()  # type: ignore[operator]
        except BaseException:  # noqa: BLE001 - reported by the exit code
            code = 1
        os._exit(code)
    return pid


def reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_messages_of_every_size_arrive_whole_and_in_order(endpoint: str) -> None:
    stop = StopPipe()
    listener = Listener(endpoint)

    def echo() -> None:
        link = connect(endpoint, "Muscle-one-0", stop.fd, stop.check, "Environment-board-0")
        for _ in SIZES:
            data = link.recv()
            link.send(data[::-1])

    pid = fork(echo)
    try:
        link = listener.accept(stop.fd, stop.check)
        assert link.peer == "Muscle-one-0"
        for size in SIZES:
            message = bytes(i % 251 for i in range(size))
            link.send(message)
            assert link.recv() == message[::-1]
    finally:
        assert reap(pid) == 0
        listener.close()
    assert not os.path.exists(listener.path)


def test_a_peer_that_ends_is_peer_gone_not_a_hang(endpoint: str) -> None:
    stop = StopPipe()
    listener = Listener(endpoint)
    pid = fork(lambda: connect(endpoint, "Brain-one", stop.fd, stop.check, "x").send(b"last"))
    link = listener.accept(stop.fd, stop.check)
    assert reap(pid) == 0
    assert link.recv() == b"last"  # what it sent before it ended still arrives
    with pytest.raises(PeerGone, match="Brain-one"):
        link.recv()
    with pytest.raises(PeerGone):
        for _ in range(1000):  # the first sends may still be buffered
            link.send(b"x" * 1000)
    listener.close()


def test_a_killed_peer_is_peer_gone(endpoint: str) -> None:
    stop = StopPipe()
    listener = Listener(endpoint)
    ready_r, ready_w = os.pipe()

    def wait_forever() -> None:
        connect(endpoint, "Muscle-one-0", stop.fd, stop.check, "x")
        os.write(ready_w, b"r")
        signal.pause()

    pid = fork(wait_forever)
    link = listener.accept(stop.fd, stop.check)
    os.read(ready_r, 1)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(PeerGone):
        link.recv()
    assert reap(pid) == -signal.SIGKILL
    listener.close()


def test_a_blocked_receive_and_a_blocked_send_end_on_stop(endpoint: str) -> None:
    stop = StopPipe()
    listener = Listener(endpoint)
    near = connect(endpoint, "Muscle-one-0", stop.fd, stop.check, "Environment-board-0")
    quiet = StopPipe()  # (the reader's loop is not stopped)
    far = listener.accept(quiet.fd, quiet.check)
    stop.trigger()  # pending before the waits: it must end them, though nothing else comes
    with pytest.raises(Stop):
        near.recv()
    sent = 0
    with pytest.raises(Stop):
        while True:  # nobody reads: the buffer fills, then the send waits (backpressure)
            near.send(b"x" * 1000)
            sent += 1
            assert sent < 100_000, "the sender was never held back"
    assert sent > 0
    received = 0
    while far.ready():  # everything that was sent arrives, whole
        assert far.recv() == b"x" * 1000
        received += 1
    assert received == sent
    near.close()
    far.close()
    listener.close()


def test_the_selector_names_the_link_that_has_a_message(endpoint: str) -> None:
    stop = StopPipe()
    listener = Listener(endpoint)
    links = [connect(endpoint, f"Muscle-{i}", stop.fd, stop.check, "env") for i in range(3)]
    selector = Selector(stop.fd, stop.check)
    accepted = {}
    for _ in links:
        link = listener.accept(stop.fd, stop.check, wait=False)
        assert link is not None
        accepted[link.peer] = link
        selector.add(link)
    assert listener.accept(stop.fd, stop.check, wait=False) is None  # none pending: no wait
    links[1].send(b"hello")
    assert selector.wait() == [accepted["Muscle-1"]]
    assert accepted["Muscle-1"].recv() == b"hello"
    selector.discard(accepted["Muscle-1"])
    links[1].send(b"ignored")
    stop.trigger()
    with pytest.raises(Stop):
        selector.wait()
    for link in links + list(accepted.values()):
        link.close()
    listener.close()


def test_the_link_lives_in_the_private_run_directory(endpoint: str) -> None:
    listener = Listener(endpoint)
    try:
        directory = os.path.dirname(listener.path)
        assert os.stat(directory).st_mode & 0o777 == 0o700
        assert listener.path.endswith(".link")
    finally:
        listener.close()


def test_messages_read_together_are_taken_one_by_one_and_the_selector_sees_them(
    link: Link,
) -> None:
    stop, near, far = link
    selector = Selector(stop.fd, stop.check)
    selector.add(far)
    for word in (b"one", b"", b"three"):
        near.send(word)
    assert far.recv() == b"one"  # one read took all three from the pipe
    assert far.pending()
    assert selector.wait() == [far]  # (the pipe is empty now: a poll alone would block)
    assert far.recv() == b""
    assert far.ready()
    assert far.recv() == b"three"
    assert not far.pending()
    assert selector.wait(0) == []
    near.close()
    with pytest.raises(PeerGone, match="Muscle-one-0"):
        far.recv()


def test_try_send_sends_a_message_whole_or_not_at_all(link: Link) -> None:
    """On a pipe a write longer than a page may be taken in part; ``try_send`` (update_lag
    async) must neither block nor cut a message: it sends one that fits whole, else nothing."""
    _, near, far = link
    message = bytes(range(256)) * 40  # 10,240 bytes: more than a page
    sent = 0
    while near.try_send(message):  # nobody reads: it refuses once the pipe has no room
        sent += 1
        assert sent < 1000, "the link was never full"
    assert sent > 0
    assert not near.try_send(message)  # (still no room: nothing half sent meanwhile)
    received = 0
    while far.ready():  # every message whole
        assert far.recv() == message
        received += 1
    assert received == sent
    assert near.try_send(message)  # room again
    assert far.recv() == message
    long = bytes(range(200)) * 1000  # longer than the pipe: goes once the pipe is empty, the
    got: list[bytes] = []  # rest as send sends it (while the peer reads)
    reader = threading.Thread(target=lambda: got.append(far.recv()), daemon=True)
    reader.start()
    assert near.try_send(long) is True
    reader.join(10)
    assert got == [long]


def test_a_long_message_tried_on_a_full_link_waits_for_room(link: Link) -> None:
    _, near, far = link
    assert near.try_send(b"x")
    assert not near.try_send(bytes(200_000))  # longer than the pipe, which is not empty
    assert far.recv() == b"x"


def test_a_links_pipes_are_not_inherited_by_programs_it_starts(link: Link) -> None:
    _, near, far = link
    for end in (near, far):
        assert not os.get_inheritable(end.fileno())


def test_a_greeting_without_its_pipes_is_an_error_that_names_the_file_limit(
    endpoint: str,
) -> None:
    import socket

    from palaestra.core.wire.channel import path_of

    stop = StopPipe()
    listener = Listener(endpoint)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(path_of(endpoint))
    sock.send(b"\x02Muscle-one-0")  # (a greeting whose pipe ends the kernel dropped)
    with pytest.raises(OSError, match="cannot open more files"):
        listener.accept(stop.fd, stop.check)
    sock.close()
    listener.close()


def test_many_messages_read_together_come_out_in_order(link: Link) -> None:
    _, near, far = link
    words = [str(i).encode() * (i % 7) for i in range(3000)]  # (some empty)
    for word in words:
        near.send(word)
    assert [far.recv() for _ in words] == words
    assert not far.pending()
