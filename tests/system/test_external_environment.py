"""External environments: runs against real client processes (Python, Node.js, offline), the
store's rows checked against the client's world, and each way a client can fail a run."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    EXPERIMENTS,
    PLUGINS,
    ROOT,
    Workspace,
    files_left,
    own_tmpdir,
    slow_after,
    wait_until_gone,
)

pytestmark = pytest.mark.timeout(60)

CLIENTS = ROOT / "palaestra" / "clients" / "python"
WORLD = CLIENTS / "heater_world.py"
FAULTS = PLUGINS / "external_faults.py"
NODE_DIR = ROOT / "clients" / "node"
NODE_WORLD = NODE_DIR / "heater-world.js"
ASKED_FOR_CLIENTS = bool(os.environ.get("PALAESTRA_TEST_EXTERNAL_CLIENTS"))

sys.path.insert(0, str(CLIENTS))
from heater_world import HeaterWorld  # noqa: E402

RUN = """\
uid: external-test
experiment_uid: external
seed: 11
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: palaestra.environment.external:ExternalEnvironment
            uid: room
            params: {params}
      agents:
        - name: thermostat
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [room.temperature, room.outside, room.time]
          actuators: [room.power]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def run_file(ws: Workspace, params: dict[str, Any], workers: int = 1, episodes: int = 2) -> Path:
    path = ws.path / "external.yml"
    path.write_text(RUN.format(params=json.dumps(params), workers=workers, episodes=episodes))
    return path


@pytest.fixture
def ipc(tmp_path: Path) -> str:
    return f"ipc://{tmp_path}/room.sock"


def start_client(ws: Workspace, command: list[str]) -> subprocess.Popen[bytes]:
    """A client process in a session of its own, which the workspace checks is gone."""
    log = open(ws.path / "client.log", "ab")  # noqa: SIM115 - the process keeps it
    proc = subprocess.Popen(command, cwd=ws.path, stdout=log, stderr=log, start_new_session=True)
    log.close()
    ws.sessions.add(proc.pid)
    return proc


def ended(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the client did not end after the run")


def rows(ws: Workspace) -> tuple[list[int], list[tuple[Any, ...]]]:
    with sqlite3.connect(ws.store) as conn:
        (seeds,) = conn.execute("select seeds from environments where uid = 'room'").fetchone()
        found = conn.execute(
            "select worker, episode, step, sensors, setpoints, rewards, done, terminated, "
            "truncated from world_states order by worker, episode, step"
        ).fetchall()
    return json.loads(seeds), found


def assert_rows_are_the_worlds(ws: Workspace, config: dict[str, Any], episodes: int) -> int:
    """Step the reference world (per worker, with its seed) through the recorded set points:
    every recorded reading, reward and end must be what it computes. Returns the rows."""
    seeds, found = rows(ws)
    by_worker: dict[int, list[tuple[Any, ...]]] = {}
    for row in found:
        by_worker.setdefault(row[0], []).append(row)
    assert sorted(by_worker) == list(range(len(seeds)))
    for worker, recorded in by_worker.items():
        world = HeaterWorld(seeds[worker], config)
        assert sorted({r[1] for r in recorded}) == list(range(episodes))
        for _, episode, step, sensors, setpoints, rewards, done, terminated, truncated in recorded:
            if step == 1:
                world.reset()
            power = json.loads(setpoints)["room.power"]
            readings, reward, term, trunc = world.step({"power": power})
            assert json.loads(sensors) == {f"room.{k}": v for k, v in readings.items()}, (
                worker,
                episode,
                step,
            )
            assert json.loads(rewards) == reward
            assert (bool(done), bool(terminated), bool(truncated)) == (term or trunc, term, trunc)
        assert recorded[-1][6]  # the last episode ran to its end
    return len(found)


def assert_run_finished(result: Any, ws: Workspace) -> None:
    assert result.returncode == 0, result.stderr
    assert ws.instance_status() == ("finished", "")


def assert_run_failed(result: Any, ws: Workspace, *texts: str) -> str:
    assert result.returncode == 1, result.stderr
    status, reason = ws.instance_status()
    assert status == "error"
    for text in texts:
        assert text in reason, reason
        assert text in result.stderr
    return reason


# --- phases against real clients ----------------------------------------------------------


def test_a_phase_against_the_python_client_two_workers_one_client(
    workspace: Workspace, ipc: str
) -> None:
    """The client binds; both workers' environments connect to it, each gets its own world."""
    client = start_client(
        workspace, [sys.executable, str(WORLD), "--bind", ipc, "--exit-on-close"]
    )
    config = {"steps": 6, "target": 20.0}
    path = run_file(workspace, {"connect": ipc, "world": config}, workers=2)
    result = workspace.run("experiment-start", str(path))
    assert_run_finished(result, workspace)
    assert assert_rows_are_the_worlds(workspace, config, episodes=2) == 2 * 2 * 6
    assert ended(client) == 0  # closed by both sessions' close


@pytest.fixture
def node() -> Iterator[str]:
    """The node binary, when the Node client's dependencies are installed (else a skip, or a
    failure when PALAESTRA_TEST_EXTERNAL_CLIENTS asks for the clients)."""
    binary = shutil.which("node")
    why = None
    if binary is None:
        why = "node is not installed"
    elif not (NODE_DIR / "node_modules" / "zeromq").is_dir():
        why = f"the Node client's dependencies are not installed: (cd {NODE_DIR} && npm ci)"
    if why is not None:
        if ASKED_FOR_CLIENTS:
            pytest.fail(f"PALAESTRA_TEST_EXTERNAL_CLIENTS is set but {why}")
        pytest.skip(why)
    assert binary is not None
    yield binary


def test_a_phase_against_the_node_client(workspace: Workspace, ipc: str, node: str) -> None:
    """palaestra binds (an address per worker); the Node.js port of the world connects and
    computes the same rows as the Python one."""
    config = {"steps": 8}
    address = ipc.replace("room.sock", "room-{worker}.sock")  # one address per worker
    params = {"bind": address, "world": config, "connect_timeout": 20}
    path = run_file(workspace, params, workers=2)
    clients = [
        start_client(
            workspace,
            [node, str(NODE_WORLD), "--connect", address.format(worker=w), "--exit-on-close"],
        )
        for w in range(2)
    ]
    result = workspace.run("experiment-start", str(path))
    assert_run_finished(result, workspace)
    assert assert_rows_are_the_worlds(workspace, config, episodes=2) == 2 * 2 * 8
    assert [ended(client) for client in clients] == [0, 0]


def test_offline_mode_runs_the_example_with_its_own_world(workspace: Workspace) -> None:
    result = workspace.run("experiment-start", str(EXPERIMENTS / "external_world.yml"))
    assert_run_finished(result, workspace)
    assert assert_rows_are_the_worlds(workspace, {"steps": 20}, episodes=2) == 2 * 2 * 20
    # the workspace fixture checks that the offline worlds ended with the run


# --- a client that fails the run ----------------------------------------------------------


def test_a_client_that_crashes_mid_episode_fails_the_run_naming_it(
    workspace: Workspace, ipc: str
) -> None:
    client = start_client(workspace, [sys.executable, str(FAULTS), "crash", "4", "--bind", ipc])
    path = run_file(workspace, {"connect": ipc, "reconnect_timeout": 0.5})
    result = workspace.run("experiment-start", str(path))
    assert_run_failed(
        result,
        workspace,
        f"external environment 'room' (worker 0, {ipc}, client 'heater')",
        "the client hung up during step 4 of episode 0 (command 6) and did not come back "
        "within 0.5 s (reconnect_timeout)",
    )
    assert "Environment-room-0" in result.stderr
    assert ended(client) == 3


def test_a_client_whose_offline_world_dies_fails_the_run_saying_how(workspace: Workspace) -> None:
    """The offline world is killed from outside mid-run: the reason says it exited."""
    path = run_file(
        workspace, {"offline": True, "reconnect_timeout": 0.2, "world": {"steps": 200}}
    )
    text = path.read_text().replace("episodes: 2", "episodes: 50")
    path.write_text(text)
    proc = workspace.start("experiment-start", str(path))
    world = _wait_for_offline_world(workspace)
    os.kill(world, 9)
    _, err = proc.communicate(timeout=40)
    assert proc.returncode == 1, err
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "external environment 'room' (worker 0, offline world ipc://" in reason
    assert f"the offline world (pid {world}) exited with code -9" in reason


def _wait_for_offline_world(ws: Workspace) -> int:
    """The pid of the offline world once it has run some steps."""
    wait_for_steps(ws)
    (world,) = [pid for pid, cmd in ws.processes() if str(WORLD) in cmd]
    return world


def wait_for_steps(ws: Workspace) -> None:
    """Until the run has recorded some steps (polls the store, bounded)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ws.store.exists():
            try:
                with sqlite3.connect(ws.store) as conn:
                    if conn.execute("select count(*) from world_states").fetchone()[0] > 5:
                        return
            except sqlite3.OperationalError:  # the tables are not there yet
                pass
        time.sleep(0.05)
    pytest.fail("the run recorded no steps")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "garbage",
            "the answer to step is not palaestra's protocol (version 1, "
            "docs/external-environments.md): b'\\xff\\xfe this is not the protocol' is not json",
        ),
        (
            "error",
            "the client answered step 2 of episode 0 (command 4) with an error: the heater "
            "caught fire",
        ),
        ("version", "the client speaks protocol version 2, palaestra speaks 1"),
    ],
)
def test_a_client_that_answers_wrongly_fails_the_run_at_once(
    workspace: Workspace, ipc: str, mode: str, expected: str
) -> None:
    client = start_client(workspace, [sys.executable, str(FAULTS), mode, "2", "--bind", ipc])
    path = run_file(workspace, {"connect": ipc, "timeout": 20})
    result = workspace.run("experiment-start", str(path))
    assert result.seconds < 15  # not the timeout: at once
    assert_run_failed(result, workspace, f"external environment 'room' (worker 0, {ipc}", expected)
    client.kill()
    client.wait()


def test_a_client_that_stops_answering_fails_the_run_after_the_timeout(
    workspace: Workspace, ipc: str
) -> None:
    """Connected (its heartbeats answered by libzmq) but silent: ``timeout``."""
    client = start_client(workspace, [sys.executable, str(FAULTS), "hang", "3", "--bind", ipc])
    path = run_file(workspace, {"connect": ipc, "timeout": 1, "heartbeat": 0.2})
    result = workspace.run("experiment-start", str(path))
    assert_run_failed(
        result,
        workspace,
        "the client did not answer step 3 of episode 0 (command 5) within 1 s (timeout)",
    )
    client.kill()
    client.wait()


@pytest.mark.slow
def test_a_frozen_client_is_found_by_its_missing_heartbeats(
    workspace: Workspace, ipc: str
) -> None:
    """A stopped process keeps its connection open: the heartbeats find it gone, long
    before the (large) timeout."""
    client = start_client(workspace, [sys.executable, str(WORLD), "--bind", ipc])
    params = {"connect": ipc, "timeout": 30, "heartbeat": 0.2, "reconnect_timeout": 0.5}
    path = run_file(workspace, {**params, "world": {"steps": 200}}, episodes=50)
    proc = workspace.start("experiment-start", str(path))
    try:
        wait_for_steps(workspace)
        os.kill(client.pid, signal.SIGSTOP)
        _, err = proc.communicate(timeout=20)
    finally:
        client.kill()
        client.wait()
    assert proc.returncode == 1, err
    status, reason = workspace.instance_status()
    assert status == "error"
    # (the stop lands in an episode's step or, with 200-step episodes, now and then in a reset)
    assert re.search(r"the client hung up during (step|reset) ", reason), reason
    assert "did not come back within 0.5 s (reconnect_timeout)" in reason


@pytest.mark.slow
def test_killing_the_executor_takes_the_offline_world_down(workspace: Workspace) -> None:
    """Every process of the run, the world too, is gone, and no file is left: the run's
    directory and the world's (where its socket is)."""
    kill_mid_offline_run(workspace, workspace.env())


def kill_mid_offline_run(ws: Workspace, env: dict[str, str]) -> None:
    """A run of an offline world, SIGKILLed while it steps (its command run with ``env`` and a
    ``TMPDIR`` of its own): no process of it and no file is left."""
    path = run_file(ws, {"offline": True, "world": {"steps": 200}}, episodes=50)
    temporary = own_tmpdir(env)
    proc = ws.spawn([sys.executable, "-m", "palaestra", "experiment-start", str(path)], env)
    wait_for_steps(ws)
    assert [cmd for _, cmd in ws.processes() if str(WORLD) in cmd]
    assert any(p.name.startswith("palaestra-external-") for p in temporary.iterdir())
    proc.kill()
    proc.communicate(timeout=10)
    assert wait_until_gone(ws.sessions, 10) == []
    assert files_left(temporary) == []


@pytest.mark.parametrize("key", ["bind", "connect"])
def test_a_client_that_never_connects_fails_after_connect_timeout(
    workspace: Workspace, tmp_path: Path, key: str
) -> None:
    address = f"ipc://{tmp_path}/nobody.sock"
    path = run_file(workspace, {key: address, "connect_timeout": 1})
    result = workspace.run("experiment-start", str(path))
    expected = {
        "bind": f"no client connected to {address} within 1 s (connect_timeout); start it with "
        f"--connect {address}",
        "connect": f"no client answered at {address} within 1 s (connect_timeout); is it "
        "running and bound to that address?",
    }
    assert_run_failed(result, workspace, expected[key])


def test_a_client_that_never_answers_hello_fails_after_the_timeout(
    workspace: Workspace, ipc: str
) -> None:
    client = start_client(workspace, [sys.executable, str(FAULTS), "silent", "0", "--bind", ipc])
    path = run_file(workspace, {"connect": ipc, "connect_timeout": 1})
    result = workspace.run("experiment-start", str(path))
    assert_run_failed(result, workspace, "the client did not answer hello (command 1) within")
    client.kill()
    client.wait()


# --- reconnecting -------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["client binds", "palaestra binds"])
@pytest.mark.parametrize("mode", slow_after(["reconnect", "drop-after"]))
def test_a_client_that_reconnects_with_its_world_continues_the_episode(
    workspace: Workspace, ipc: str, side: str, mode: str
) -> None:
    """Dropped connection, same process (before it answers a step, or after): greeted
    again, the step sent again; the rows are exactly the world's, no step lost or taken
    twice."""
    flag, key = ("--bind", "connect") if side == "client binds" else ("--connect", "bind")
    client = start_client(
        workspace, [sys.executable, str(FAULTS), mode, "5", flag, ipc, "--exit-on-close"]
    )
    config = {"steps": 6}
    path = run_file(workspace, {key: ipc, "world": config, "reconnect_timeout": 10})
    result = workspace.run("experiment-start", str(path))
    assert_run_finished(result, workspace)
    assert "the client is back (it kept the episode)" in result.stderr
    assert assert_rows_are_the_worlds(workspace, config, episodes=2) == 2 * 6
    assert ended(client) == 0


def test_a_client_that_comes_back_without_its_world_restarts_the_episode(
    workspace: Workspace, ipc: str
) -> None:
    client = start_client(
        workspace, [sys.executable, str(FAULTS), "restart", "3", "--bind", ipc, "--exit-on-close"]
    )
    path = run_file(workspace, {"connect": ipc, "world": {"steps": 5}})
    result = workspace.run("experiment-start", str(path))
    assert_run_finished(result, workspace)
    assert "the client is back (a fresh world)" in result.stderr
    _, found = rows(workspace)
    cut = [r for r in found if r[1] == 0]
    assert [r[2] for r in cut] == [1, 2, 3]  # the third step ended episode 0
    assert (cut[-1][6], cut[-1][7], cut[-1][8]) == (1, 0, 1)  # done, truncated
    assert json.loads(cut[-1][5]) == {}  # no rewards
    assert json.loads(cut[-1][3]) == json.loads(cut[-2][3])  # the readings before stand
    assert [r[2] for r in found if r[1] == 1] == [1, 2, 3, 4, 5]  # the next one is whole
    assert ended(client) == 0


def test_check_environment_checks_a_client(tmp_path: Path) -> None:
    """What a client's author runs: palaestra.testing.check_environment against it."""
    from palaestra.testing import check_environment

    external = "palaestra.environment.external:ExternalEnvironment"
    params = {"offline": True, "world": {"steps": 4}}
    sensors, actuators = check_environment(external, params, steps=4)
    assert [s.uid for s in sensors] == ["temperature", "outside", "time"]
    assert [a.uid for a in actuators] == ["power"]
    # past the end of an episode (4 steps) the check resets it, as a run does
    assert check_environment(external, params, steps=9)[1] == actuators
    with pytest.raises(
        Exception, match="with an error: cannot make the world: ValueError: config.steps must be"
    ) as info:
        check_environment(external, {**params, "world": {"steps": 0}})
    assert "external environment 'checked' (worker 0, offline world ipc://" in str(info.value)
    from palaestra.core.supervision.reaper import children, describe

    assert not [describe(pid) for pid in children() if str(WORLD) in describe(pid)]


# --- the reference client needs nothing of palaestra ---------------------------------------


def test_the_python_client_imports_nothing_of_palaestra(tmp_path: Path) -> None:
    """Copied out of the package next to a 'palaestra' that refuses to be imported, the
    client runs a whole session (greeted, reset, stepped, closed) in an isolated Python."""
    for name in ("palaestra_client.py", "heater_world.py"):
        shutil.copy(CLIENTS / name, tmp_path / name)
    (tmp_path / "palaestra").mkdir()
    (tmp_path / "palaestra" / "__init__.py").write_text("raise ImportError('palaestra imported')")
    script = f"""
import sys, json, threading
sys.path[:0] = [{str(tmp_path)!r}]
import zmq, heater_world
address = "ipc://{tmp_path}/w.sock"
t = threading.Thread(target=heater_world.main, args=(["--bind", address, "--exit-on-close"],))
t.start()
ctx = zmq.Context(); s = ctx.socket(zmq.DEALER); s.connect(address)
def ask(**c):
    s.send(json.dumps(c).encode()); return json.loads(s.recv())
assert ask(id=1, command="hello", version=1, session="s", seed=3)["status"] == "ok"
assert ask(id=2, command="reset")["sensors"]["time"] == 0
assert ask(id=3, command="step", setpoints={{"power": [1.0]}})["sensors"]["time"] == 1
assert ask(id=4, command="close")["status"] == "ok"
t.join(5); assert not t.is_alive()
bad = [m for m in sys.modules if m == "palaestra" or m.startswith("palaestra.")]
assert not bad, bad
print("clean")
"""
    done = subprocess.run(
        [sys.executable, "-I", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"
