"""Where sockets live: private ipc endpoints in a per-run directory only the user can enter.

Everything of a run binds to ``ipc://`` paths inside a directory created with mode 0700, so no
other user on the host can connect, and the pickled user payloads on the Muscle <-> Brain path
are only reachable by the run's own processes. A run on one host binds no TCP port.

A run whose processes are on several hosts (:mod:`palaestra.core.wire.netlink`) announces each
endpoint as its ipc alternative, its CURVE tcp alternative and its host's name
(:func:`announce`): ``net:`` and a JSON object; a peer on the same host takes the ipc one.
"""

from __future__ import annotations

import shutil
import tempfile

import msgspec

from palaestra.core.files import LONGEST_NAME, file_for, socket_parent

RUN_DIR_PREFIX = "palaestra-"


def make_run_dir() -> str:
    """Create the private directory for one run's endpoints (mode 0700), in the temporary
    directory, or in ``/tmp`` where that is too deep for its sockets' paths
    (:func:`~palaestra.core.files.socket_parent`)."""
    return tempfile.mkdtemp(prefix=RUN_DIR_PREFIX, dir=socket_parent(RUN_DIR_PREFIX, LONGEST_NAME))


def remove_run_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def endpoint_for(run_dir: str, name: str) -> str:
    """A unique ``ipc://`` endpoint for ``name`` inside ``run_dir``, short enough for a socket."""
    return f"ipc://{file_for(run_dir, name, '.sock')}"


def link_for(endpoint: str) -> str:
    """The endpoint of the per-step link (:mod:`palaestra.core.wire.channel`) beside
    ``endpoint``."""
    net = parse(endpoint)
    if net is None:
        return endpoint.removesuffix(".sock") + ".link"
    return announce(link_for(net.ipc), net.host, net.link)


NET_PREFIX = "net:"


class NetEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    """An endpoint of a run across hosts: its ``ipc`` alternative for peers on ``host``, its
    ``tcp`` one (CURVE) for the others and, for an endpoint with a per-step link beside it,
    the link's ``tcp`` alternative (its gateway's: see :mod:`palaestra.core.wire.netlink`)."""

    ipc: str
    host: str
    tcp: str
    link: str = ""


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(NetEndpoint)


def announce(ipc: str, host: str, tcp: str, link: str = "") -> str:
    """The endpoint to announce for a socket bound on ``ipc`` and ``tcp`` on ``host``."""
    return (
        NET_PREFIX + _ENCODER.encode(NetEndpoint(ipc=ipc, host=host, tcp=tcp, link=link)).decode()
    )


def with_link(endpoint: str, link: str) -> str:
    """``endpoint`` with the tcp alternative of its per-step link (unchanged if it is a plain
    ipc endpoint, or ``link`` is empty)."""
    net = parse(endpoint)
    if net is None or not link:
        return endpoint
    return announce(net.ipc, net.host, net.tcp, link)


def parse(endpoint: str) -> NetEndpoint | None:
    """The alternatives of an announced endpoint; None for a plain (ipc) one."""
    if not endpoint.startswith(NET_PREFIX):
        return None
    return _DECODER.decode(endpoint[len(NET_PREFIX) :])
