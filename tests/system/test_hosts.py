"""Runs across hosts (palaestra.core.wire.netlink): the executor, the store writer and the
simulation controllers on one host, the others on other hosts, linked by CURVE tcp. On 127.0.0.1
with four host names (any machine), and in network namespaces with addresses of their own (root;
tests/netns.py), where the processes really talk across addresses: the rows of a local run,
strangers refused, a host lost mid-run fails the run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from tests.conftest import (
    ROOT,
    Workspace,
    finish,
    step_rows,
    wait_for_mark,
    wait_until_gone,
)
from tests.netns import DRIVER, Hosts, why_not

RUN = ROOT / "experiments" / "dummy_run.yml"
STEPS = 1000
"""Steps of each phase's episode in the long runs."""


def _start(ws: Workspace, run_file: Path, store: Path, *args: str) -> subprocess.Popen[str]:
    env = ws.env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env["PYTHONPATH"]])
    return ws.spawn([sys.executable, str(DRIVER), str(run_file), f"sqlite:///{store}", *args], env)


def _execute(ws: Workspace, run_file: Path, store: Path, *args: str) -> tuple[int, str, str]:
    return finish(_start(ws, run_file, store, *args), 150)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_over_four_host_names_gives_the_rows_of_a_local_run(workspace: Workspace) -> None:
    # the executor's host, and one each for the environment, the Muscles and the Brains:
    # every per-step link and every control socket of a phase crosses hosts
    code, _, err = _execute(workspace, RUN, workspace.path / "local.db", "local")
    assert code == 0, err
    code, out, err = _execute(
        workspace,
        RUN,
        workspace.path / "hosts.db",
        "127.0.0.1",
        "Environment@-@127.0.0.1",
        "Muscle@-@127.0.0.1",
        "Brain@-@127.0.0.1",
    )
    assert code == 0, err + out
    states, actions = step_rows(workspace.path / "hosts.db")
    assert len(states) == 20 and len(actions) == 40
    assert (states, actions) == step_rows(workspace.path / "local.db")


# --- in network namespaces -----------------------------------------------------------------

NOT_HERE = why_not()
netns = pytest.mark.skipif(NOT_HERE is not None, reason=f"no network namespaces: {NOT_HERE}")


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with Hosts(2) as made:
        yield made


def _placed(hosts: Hosts) -> list[str]:
    """Muscles and environments on the first namespace, Brains on the second."""
    first, second = hosts.hosts
    return [
        hosts.home,
        f"Muscle,Environment@{first.ns}@{first.address}",
        f"Brain@{second.ns}@{second.address}",
    ]


def _long_run(ws: Workspace) -> Path:
    """dummy_run with long episodes, paced a little, whose Muscles mark once they act."""
    return ws.variant(
        "dummy_run.yml",
        (
            "params: {discrete: true, max_iter: 10}",
            f"params: {{discrete: true, max_iter: {STEPS}, step_delay: 0.001}}",
        ),
        (
            "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}",
            "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 50}}",
        ),
    )


@netns
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_across_namespaces_gives_the_rows_of_a_local_run(
    workspace: Workspace, hosts: Hosts
) -> None:
    code, _, err = _execute(workspace, RUN, workspace.path / "local.db", "local")
    assert code == 0, err
    code, out, err = _execute(workspace, RUN, workspace.path / "hosts.db", *_placed(hosts))
    assert code == 0, err + out
    assert step_rows(workspace.path / "hosts.db") == step_rows(workspace.path / "local.db")


@netns
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_processes_talk_over_tcp_and_strangers_get_no_answer(
    workspace: Workspace, hosts: Hosts
) -> None:
    run_file = _long_run(workspace)
    proc = _start(workspace, run_file, workspace.store, *_placed(hosts))
    wait_for_mark(workspace.path / "acting", proc, 90)
    first, second = hosts.hosts
    muscles = hosts.tcp_peers(first)
    # the Muscles' links to their Brains (second host), everyone's to the executor's host
    assert any(f"{second.address}:" in line for line in muscles), muscles
    assert any(f"{hosts.home}:" in line for line in muscles), muscles
    # a stranger, on the executor's host, at every port the run listens on there
    listening = subprocess.run(
        ["ss", "-tlnH", "src", hosts.home], capture_output=True, text=True, timeout=30
    ).stdout.split("\n")
    ports = [line.split()[3].rsplit(":", 1)[1] for line in listening if line.strip()]
    assert ports, listening
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        strangers = []
        for port in ports:
            plain = ctx.socket(zmq.DEALER)
            plain.connect(f"tcp://{hosts.home}:{port}")
            keyed = ctx.socket(zmq.DEALER)
            public, secret = zmq.curve_keypair()
            server_public, _ = zmq.curve_keypair()  # not the run's: it is nowhere to be read
            keyed.setsockopt(zmq.CURVE_SERVERKEY, server_public)
            keyed.setsockopt(zmq.CURVE_PUBLICKEY, public)
            keyed.setsockopt(zmq.CURVE_SECRETKEY, secret)
            keyed.connect(f"tcp://{hosts.home}:{port}")
            strangers += [plain, keyed]
        for sock in strangers:
            sock.setsockopt(zmq.LINGER, 0)
            sock.send(b"\x00" * 8, zmq.NOBLOCK)
        time.sleep(0.5)  # a window for an answer that must not come
        assert not any(sock.poll(0) for sock in strangers)
    finally:
        ctx.destroy(linger=0)
    out, err = proc.communicate(timeout=200)
    assert proc.returncode == 0, err[-3000:] + out
    states, actions = step_rows(workspace.store)
    assert len(states) == 2 * STEPS and len(actions) == 2 * 2 * STEPS


@netns
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_host_lost_mid_run_fails_the_run_naming_it(workspace: Workspace, hosts: Hosts) -> None:
    run_file = _long_run(workspace)
    proc = _start(workspace, run_file, workspace.store, *_placed(hosts))
    wait_for_mark(workspace.path / "acting", proc, 90)
    first = hosts.hosts[0]
    pids = subprocess.run(
        ["ip", "netns", "pids", first.ns], capture_output=True, text=True, timeout=30
    ).stdout.split()
    assert pids
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-3000:] + out
    assert re.search(rf"(Muscle|Environment)-\S+ on host {first.ns} was killed by SIGKILL", out), (
        out
    )
    status, reason = workspace.instance_status()
    assert status == "error" and f"on host {first.ns}" in reason
    assert wait_until_gone(workspace.sessions, 10) == []


@pytest.mark.timeout(120)
def test_an_address_the_host_lacks_exits_2_naming_it(workspace: Workspace) -> None:
    code, out, err = _execute(
        workspace, RUN, workspace.store, "127.0.0.1", "Muscle@-@10.255.255.254"
    )
    assert code == 2, err + out
    assert "cannot bind tcp://10.255.255.254:* on host 'host1'" in out, out
    status, reason = workspace.instance_status()
    assert status == "error" and "10.255.255.254" in reason
