"""Simulated hosts for tests and benchmarks: Linux network namespaces joined by a bridge.

:class:`Hosts` makes K namespaces, each with a veth pair into a bridge in the namespace of the
caller (whose address is ``hosts.home``), its own address and an optional added delay (``tc
netem``), and removes them all again (also after a failure). Names are unique per process, so
runs in parallel do not meet. Needs root (``ip netns``); :func:`why_not` says why they cannot
be made here, for a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

DRIVER = Path(__file__).with_name("netns_driver.py")


def _ip(*args: str, ns: str | None = None) -> None:
    command = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    subprocess.run(command, check=True, capture_output=True, timeout=30)


def why_not() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"pa-probe-{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, OSError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        return f"`ip netns add` is not permitted here ({err.decode(errors='replace').strip()})"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return None


def netem_missing() -> str | None:
    """Why ``tc netem`` cannot delay packets here (None: it can): a kernel without
    ``sch_netem`` says "Specified qdisc kind is unknown"."""
    with Hosts(1) as probe:
        command = [*probe.hosts[0].prefix(), "tc", "qdisc", "add", "dev", probe.hosts[0].veth]
        command += ["root", "netem", "delay", "1ms"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode == 0:
        return None
    return f"`tc qdisc add ... netem` failed: {done.stderr.strip() or done.returncode}"


@dataclass
class Host:
    ns: str
    address: str
    veth: str  # the end in the namespace

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]


@dataclass
class Hosts:
    """``count`` namespaces on one bridge whose address (``home``) is the caller's. With
    ``delay_ms``, netem delays what leaves either end of each host's veth: a packet between a
    host and home is ``delay_ms`` late, one between two hosts twice that."""

    count: int
    delay_ms: float = 0.0
    tag: str = field(default_factory=lambda: f"{os.getpid() % 100000}")
    hosts: list[Host] = field(default_factory=list)
    home: str = ""
    bridge: str = ""

    def __enter__(self) -> Hosts:
        pid = os.getpid()
        subnet = f"10.{200 + pid % 50}.{(pid // 50) % 250}"
        self.bridge = f"pab{self.tag}"
        self.home = f"{subnet}.1"
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.home}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i in range(self.count):
                self._add(i, subnet)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _add(self, i: int, subnet: str) -> None:
        ns = f"pa{self.tag}h{i}"
        outer, inner = f"pav{self.tag}{i}", f"pai{self.tag}{i}"
        _ip("netns", "add", ns)
        host = Host(ns=ns, address=f"{subnet}.{i + 2}", veth=inner)
        self.hosts.append(host)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("link", "set", outer, "master", self.bridge, "up")
        _ip("addr", "add", f"{host.address}/24", "dev", inner, ns=ns)
        _ip("link", "set", inner, "up", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        if self.delay_ms > 0:
            for dev, where in ((inner, ns), (outer, None)):
                command = ["tc", "qdisc", "add", "dev", dev, "root", "netem"]
                command += ["delay", f"{self.delay_ms}ms"]
                if where is not None:
                    command = ["ip", "netns", "exec", where, *command]
                subprocess.run(command, check=True, capture_output=True, timeout=30)

    def __exit__(self, *exc: object) -> None:
        for host in self.hosts:
            subprocess.run(["ip", "netns", "del", host.ns], capture_output=True, timeout=30)
        if self.bridge:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)
        self.hosts = []

    def tcp_peers(self, host: Host) -> list[str]:
        """The established TCP connections of ``host``'s processes (``ss -tnp``), one line
        each."""
        out = subprocess.run(
            ["ip", "netns", "exec", host.ns, "ss", "-tnpH", "state", "established"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        return [line for line in out.splitlines() if line.strip()]
