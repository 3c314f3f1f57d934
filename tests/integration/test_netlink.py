"""Links across hosts (palaestra.core.wire.netlink) on real sockets: endpoints with ipc and CURVE
tcp alternatives, the ZAP handler that admits only the run's client key, and the per-step channels
carried by a gateway and a relay. Two "hosts" are two host names on 127.0.0.1: the choice of
alternative goes by name, so the tcp path is taken as between two machines."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import zmq

from palaestra.core.wire.channel import CHUNK, Listener, PeerGone
from palaestra.core.wire.netlink import Host, Links, Network, RunKeys, pick
from palaestra.core.wire.transport import (
    announce,
    endpoint_for,
    link_for,
    make_run_dir,
    parse,
    remove_run_dir,
    with_link,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

HOME = Host(name="home", address="127.0.0.1")
AWAY = Host(name="away", address="127.0.0.1")


class Stop(Exception):
    pass


@pytest.fixture
def run_dir() -> Iterator[str]:
    path = make_run_dir()
    try:
        yield path
    finally:
        remove_run_dir(path)


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield context
    context.destroy(linger=0)


def links_pair(
    ctx: zmq.Context[zmq.Socket[bytes]],
) -> tuple[Links, Links]:
    home = Network.for_run(HOME)
    return Links(home, ctx), Links(home.on(AWAY), ctx)


def test_endpoints_carry_their_alternatives_and_the_link_beside_them() -> None:
    plain = "ipc:///tmp/palaestra-x/Env-0-env.sock"
    assert parse(plain) is None and with_link(plain, "tcp://1.2.3.4:5") == plain
    assert link_for(plain) == "ipc:///tmp/palaestra-x/Env-0-env.link"
    net = with_link(announce(plain, "h1", "tcp://10.0.0.2:4000"), "tcp://10.0.0.2:4001")
    link = parse(link_for(net))
    assert link is not None
    assert (link.ipc, link.host, link.tcp) == (link_for(plain), "h1", "tcp://10.0.0.2:4001")
    keys = RunKeys.generate()
    on_h1 = Network(host="h1", address="10.0.0.2", keys=keys)
    on_h2 = on_h1.on(Host(name="h2", address="10.0.0.3"))
    assert pick(net, on_h1) == (plain, False)
    assert pick(net, on_h2) == ("tcp://10.0.0.2:4000", True)
    assert pick(net, None) == (plain, False)
    assert pick(plain, on_h2) == (plain, False)


def test_without_a_network_nothing_binds_tcp(
    run_dir: str, ctx: zmq.Context[zmq.Socket[bytes]]
) -> None:
    links = Links(None, ctx)
    sock = ctx.socket(zmq.ROUTER)
    endpoint = endpoint_for(run_dir, "plain")
    assert links.bind(sock, endpoint) == endpoint
    assert links.listen(Listener(link_for(endpoint))) == ""
    sock.close(linger=0)
    links.close()


def _answers(sock: zmq.Socket[bytes], server: zmq.Socket[bytes], timeout_ms: int) -> bool:
    """Whether ``server`` gets ``sock``'s request within ``timeout_ms`` and ``sock`` the reply.
    (A refused peer may have no pipe between a failed handshake and its retry: the send is
    bounded too.)"""
    sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
    try:
        sock.send(b"hello")
    except zmq.Again:
        return False
    if not server.poll(timeout_ms):
        return False
    peer, payload = server.recv_multipart()
    server.send_multipart([peer, b"re:" + payload])
    return bool(sock.poll(timeout_ms)) and sock.recv() == b"re:hello"


def test_curve_admits_the_runs_client_and_no_one_else(
    run_dir: str, ctx: zmq.Context[zmq.Socket[bytes]]
) -> None:
    home, away = links_pair(ctx)
    server = ctx.socket(zmq.ROUTER)
    server.setsockopt(zmq.LINGER, 0)
    endpoint = home.bind(server, endpoint_for(run_dir, "server"))
    net = parse(endpoint)
    assert net is not None and net.host == "home" and net.tcp.startswith("tcp://127.0.0.1:")

    local = ctx.socket(zmq.DEALER)  # same host: ipc, no CURVE
    home.connect(local, endpoint)
    assert _answers(local, server, 5000)
    member = ctx.socket(zmq.DEALER)  # another host of the run: tcp with the run's keys
    away.connect(member, endpoint)
    assert _answers(member, server, 5000)

    plain = ctx.socket(zmq.DEALER)  # a stranger in plaintext
    plain.connect(net.tcp)
    stranger = ctx.socket(zmq.DEALER)  # a CURVE client with a key of its own
    public, secret = zmq.curve_keypair()
    stranger.setsockopt(zmq.CURVE_SERVERKEY, home.network.keys.server_public.encode())  # type: ignore[union-attr]
    stranger.setsockopt(zmq.CURVE_PUBLICKEY, public)
    stranger.setsockopt(zmq.CURVE_SECRETKEY, secret)
    stranger.connect(net.tcp)
    for sock in (plain, stranger):
        sock.setsockopt(zmq.LINGER, 0)
        assert not _answers(sock, server, 500)
    assert home._zap is not None and home._zap.refused >= 1
    assert _answers(member, server, 5000)  # the run's own still get through
    for sock in (local, member, plain, stranger, server):
        sock.close(linger=0)
    home.close()
    away.close()


def test_channels_cross_hosts_through_gateway_and_relay(
    run_dir: str, ctx: zmq.Context[zmq.Socket[bytes]]
) -> None:
    home, away = links_pair(ctx)
    stop_r, stop_w = os.pipe()

    def check() -> None:
        raise Stop

    listener = Listener(link_for(endpoint_for(run_dir, "Brain-a")))
    gateway = home.listen(listener)
    endpoint = announce(listener.endpoint, "home", gateway)
    near = home.channel(endpoint, "Muscle-a-0", stop_r, check, "Brain-a")  # ipc, no relay
    far = away.channel(endpoint, "Muscle-a-1", stop_r, check, "Brain-a")  # through the relay
    accepted = {}
    for _ in range(2):
        channel = listener.accept(stop_r, check)
        assert channel is not None
        accepted[channel.peer] = channel
    assert sorted(accepted) == ["Muscle-a-0", "Muscle-a-1"]
    brain_side = accepted["Muscle-a-1"]
    for size in (0, 1, 76, CHUNK, CHUNK + 1, 3 * CHUNK + 5):
        data = os.urandom(size)
        far.send(data)
        assert brain_side.recv() == data
        brain_side.send(data[::-1])
        assert far.recv() == data[::-1]
    assert home.counters()["received"] >= 6 and away.counters()["sent"] >= 6
    far.close()  # the Muscle ends: the Brain's side sees the hang-up
    with pytest.raises(PeerGone):
        brain_side.recv()
    brain_side.close()
    near.close()
    accepted["Muscle-a-0"].close()
    listener.close()
    home.close()
    away.close()
    os.close(stop_r)
    os.close(stop_w)
