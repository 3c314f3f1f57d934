"""A run on a Ray cluster whose nodes are on different hosts: network namespaces.

The head node is in the test's namespace (at the bridge's address, ``hosts.home``), two more
nodes each in a namespace of its own (``ray start`` under ``ip netns exec``), so the run's
processes really are on three addresses. The executor, attached to the head, places them with
SPREAD; the processes on other hosts than the executor's must reach their peers by CURVE tcp
(:mod:`palaestra.core.wire.netlink`), and the rows must be those of a local run. The store is the
local PostgreSQL server through its Unix socket, which every namespace shares (its TCP
address, 127.0.0.1, is each namespace's own).

Every process the test's Ray nodes start carries ``PALAESTRA_TEST_MARK`` in its environment:
the nodes are stopped by killing what is marked (``ray stop`` would stop every Ray on the
machine), and nothing may be left afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import Workspace, finish, needs
from tests.netns import Hosts, why_not
from tests.system.test_ray_run import PLACED, _gone, _instance_of, _marked, _rows

NOT_HERE = why_not()
NO_TOKEN = {"RAY_AUTH_MODE": "disabled"}
"""Ray (2.5x) turns token authentication on for a head node once a token file exists
(``~/.ray/auth_token``, which any local ``ray.init()`` writes), while ``ray start --address``
joins without one unless told: the test's nodes and its executor say the mode explicitly."""
PG_SOCKETS = "/var/run/postgresql"

pytestmark = [
    pytest.mark.slow,
    needs("ray", "the palaestra[ray] extra is not installed"),
    pytest.mark.skipif(NOT_HERE is not None, reason=f"no network namespaces: {NOT_HERE}"),
]


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """Ray nodes on the hosts of ``hosts``: the head at ``hosts.home``."""

    hosts: Hosts
    mark: str
    temp: str
    address: str = ""

    def _ray(self, prefix: list[str], *args: str) -> None:
        env = dict(os.environ, PALAESTRA_TEST_MARK=self.mark, RAY_USAGE_STATS_ENABLED="0")
        env.update(NO_TOKEN)
        ray_cli = str(Path(sys.executable).with_name("ray"))
        done = subprocess.run(
            [*prefix, ray_cli, "start", "--disable-usage-stats", "--num-cpus", "2", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def start(self) -> None:
        home = self.hosts.home
        self.address = f"{home}:{_free_port(home)}"
        self._ray(
            [],
            "--head",
            "--node-ip-address",
            home,
            "--port",
            self.address.rsplit(":", 1)[1],
            "--include-dashboard",
            "false",
            "--temp-dir",
            self.temp,
        )
        for host in self.hosts.hosts:
            self._ray(host.prefix(), "--address", self.address, "--node-ip-address", host.address)

    def stop(self) -> list[int]:
        """Kill every marked process; the ones still there after a while."""
        for pid in _marked(self.mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return _gone(self.mark, timeout=30)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    temp = tempfile.mkdtemp(prefix="pa-ray-")  # short: Ray's socket paths live below it
    with Hosts(2) as hosts:
        nodes = Cluster(hosts, uuid.uuid4().hex, temp)
        try:
            nodes.start()
            yield nodes
        finally:
            left = nodes.stop()
            shutil.rmtree(temp, ignore_errors=True)
            assert left == [], f"Ray processes survived: {left}"


@pytest.fixture
def socket_pg_uri(pg_uri: str) -> str:
    """``pg_uri`` through the server's Unix socket (reachable from every namespace)."""
    from sqlalchemy.engine import make_url

    url = make_url(pg_uri)
    if url.host not in ("127.0.0.1", "localhost") or not os.path.exists(
        f"{PG_SOCKETS}/.s.PGSQL.{url.port or 5432}"
    ):
        pytest.skip(f"the PostgreSQL server of the tests has no Unix socket in {PG_SOCKETS}")
    return url.set(host=None, port=None, query={"host": PG_SOCKETS}).render_as_string(
        hide_password=False
    )


STEPS = 200
SLOWER = (
    "params: {discrete: true, max_iter: 10}",
    f"params: {{discrete: true, max_iter: {STEPS}, step_delay: 0.01}}",
)
"""Episodes of a few seconds: time to see the run's TCP connections while it runs."""


def _palaestra_tcp(hosts: Hosts) -> list[str]:
    """Established TCP connections of palaestra's processes (titled ``palaestra[...]``; the
    Ray nodes' own connections are not theirs) in the namespaces: their links across hosts."""
    found = []
    for host in hosts.hosts:
        for line in hosts.tcp_peers(host):
            for pid in re.findall(r"pid=(\d+)", line):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
                except OSError:
                    continue
                if title.startswith("palaestra["):
                    found.append(f"{host.address} {title}: {line.split()[2:4]}")
    return found


@pytest.mark.timeout(400)
def test_a_run_over_nodes_on_three_hosts_talks_curve_tcp_and_gives_the_rows_of_a_local_run(
    workspace: Workspace, cluster: Cluster, socket_pg_uri: str
) -> None:
    env = {**workspace.env(), **NO_TOKEN}
    env["PALAESTRA_STORE_URI"] = socket_pg_uri
    argv = [sys.executable, "-m", "palaestra", "-v", "experiment-start"]
    slower = workspace.variant("dummy_run.yml", SLOWER)
    code, out, err = finish(workspace.spawn([*argv, str(slower)], env), 120)
    assert code == 0, err[-3000:]
    local = _instance_of(out)

    config = workspace.path / "runtime.yaml"
    config.write_text(
        f"store_uri: '{socket_pg_uri}'\nbackend: ray\nray_address: '{cluster.address}'\n"
        "start_timeout: 120\n"
    )
    spread = workspace.variant(
        "dummy_run.yml",
        SLOWER,
        ("run_config:\n", "run_config:\n  placement: {strategy: SPREAD, num_cpus: 0.5}\n"),
    )
    argv = [sys.executable, "-m", "palaestra", "-v", "-c", str(config), "experiment-start"]
    proc = workspace.spawn([*argv, str(spread)], env)
    crossing: list[str] = []
    while not crossing and proc.poll() is None:  # bounded: the run ends (finish's timeout)
        crossing = _palaestra_tcp(cluster.hosts)
        time.sleep(0.1)
    code, out, err = finish(proc, 300)
    assert code == 0, err[-3000:]
    assert crossing, "no palaestra process on another host had a TCP connection"
    placed = {name: ip for name, ip, _ in PLACED.findall(err) if name != "the"}
    away = {ip for ip in placed.values()} - {cluster.hosts.home}
    assert away, placed  # processes on the other hosts
    assert "the run crosses hosts" in err and "links between them are CURVE tcp" in err
    states, actions = _rows(socket_pg_uri, _instance_of(out))
    assert len(states) == 2 * STEPS and len(actions) == 2 * 2 * STEPS
    assert (states, actions) == _rows(socket_pg_uri, local)
