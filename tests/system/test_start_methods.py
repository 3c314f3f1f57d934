"""Runs under each start method (fork, forkserver, spawn) and the ``auto`` rule, through the CLI.

Scenarios per method: a two-phase, two-worker run whose second phase loads the Brain's dump (its
plug-ins record how their process started); and for forkserver and spawn (fork's are in
``test_failure_matrix.py``) a plug-in that raises and SIGINT to the executor; for forkserver,
SIGKILL of the executor (nothing may survive: neither the run's processes nor the fork server).
The ``auto`` rule is tested with a fake ``torch`` (``tests/plugins/fake_torch``) and a plug-in
module that initialises its "CUDA" at import: auto starts the children by forkserver and the
run finishes; fork fails with the error real torch gives.

Then the matrix: forkserver and spawn each run one run of every kind of run that starts
processes differently (several games per worker, an asynchronous environment, an external
environment with its offline worlds, taking turns) and a stopped Muscle (liveness): what a
start method changes is how a process begins, imports its plug-ins and reports, so CI runs the
rest of ``tests/system`` with the default only.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import (
    EXPERIMENTS,
    PLUGINS,
    Workspace,
    files_left,
    finish,
    own_tmpdir,
    slow_after,
    wait_until_gone,
)
from tests.plugins.start_record import read_records

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        bool(os.environ.get("PALAESTRA_START_METHOD")),
        reason="sets the start method of each run itself (CI's passes with one set skip it)",
    ),
]

METHODS = ["fork", "forkserver", "spawn"]
OTHER_METHODS = ["forkserver", "spawn"]
"""Fork's failures and interrupts are tested in ``test_failure_matrix.py`` (it is the default)."""
_BRAIN = "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}"
_MUSCLE = "muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}"
_TT_BRAIN = "brain: {name: palaestra.agent:DummyBrain, params: {}}"
_TT_MUSCLE = "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}"
_TT_ENV_PARAMS = "params: {discrete: true, max_iter: 10}"


def _env(ws: Workspace, method: str | None, fake_torch: bool = False) -> dict[str, str]:
    env = ws.env()
    env.pop("PALAESTRA_START_METHOD", None)
    if method is not None:
        env["PALAESTRA_START_METHOD"] = method
    if fake_torch:
        env["PYTHONPATH"] = os.pathsep.join([str(PLUGINS / "fake_torch"), env["PYTHONPATH"]])
    return env


def _start(ws: Workspace, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return ws.spawn([sys.executable, "-m", "palaestra", *args], env)


def _finish(proc: subprocess.Popen[str], timeout: float = 45) -> tuple[int, str]:
    code, _, err = finish(proc, timeout, "palaestra")
    return code, err


def _poll(condition: Callable[[], object], timeout: float, proc: subprocess.Popen[str]) -> bool:
    """Bounded polling until ``condition()`` holds; False on timeout or the CLI's end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():
            return True
        time.sleep(0.02)
    return False


def _check_started_by(records: list[dict[str, object]], method: str, executor: int) -> None:
    """Every recorded process started by ``method``: forked or spawned by the executor itself,
    or forked by multiprocessing's fork server (a child of the executor)."""
    assert records
    for record in records:
        assert record["method"] == method, record
        if method == "forkserver":
            assert record["ppid"] != executor, record
            assert "multiprocessing.forkserver" in str(record["parent_cmdline"]), record
        else:
            assert record["ppid"] == executor, record


@pytest.mark.parametrize("method", slow_after([*METHODS, "auto"], 2))
def test_a_two_phase_multi_worker_run_with_dumps(workspace: Workspace, method: str) -> None:
    record = workspace.path / "started.jsonl"
    run_file = workspace.variant(
        "multiworker_run.yml",
        (_BRAIN, f"brain: {{name: start_record:RecordingBrain, params: {{record: '{record}'}}}}"),
        (
            _MUSCLE,
            f"muscle: {{name: start_record:RecordingMuscle, params: {{record: '{record}'}}}}",
        ),
    )
    proc = _start(workspace, _env(workspace, method), "experiment-start", str(run_file))
    code, err = _finish(proc)

    assert code == 0, err[-3000:]
    assert workspace.instance_status() == ("finished", "")
    records = read_records(str(record))
    assert sorted(r["role"] for r in records) == ["brain", "brain", "muscle", "muscle", "muscle"]
    _check_started_by(records, "fork" if method == "auto" else method, proc.pid)
    assert "CUDA" not in err  # auto without CUDA: fork, without a word
    with sqlite3.connect(workspace.store) as conn:
        phases = conn.execute(
            "select p.name, count(b.id) > 0, a.loaded_from is not null from agents a "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            "left join brain_states b on b.agent_id = a.id group by a.id order by p.id"
        ).fetchall()
        steps = conn.execute("select count(*) from world_states").fetchone()[0]
    assert phases == [("train", 1, 0), ("test", 1, 1)]  # dumped in train, loaded in test
    assert steps == 2 * 2 * 20 + 20  # two workers of two 20-step episodes, then one episode


@pytest.mark.slow
def test_each_run_of_a_command_has_a_fork_server_of_its_own(workspace: Workspace) -> None:
    """A fork server's children get the environment it started with: a second run of the same
    ``experiment-start`` must not get the first's (its recording flag is another file)."""
    record = workspace.path / "started.jsonl"
    run_files = []
    for uid in ("first", "second"):
        text = workspace.variant(
            "dummy_run.yml",
            ("uid: dummy-run", f"uid: {uid}"),
            (
                _BRAIN,
                f"brain: {{name: start_record:RecordingBrain, params: {{record: '{record}'}}}}",
            ),
        ).read_text()
        run_files.append(workspace.path / f"{uid}.yml")
        run_files[-1].write_text(text)
    env = _env(workspace, "forkserver")
    proc = _start(workspace, env, "experiment-start", *map(str, run_files))
    code, err = _finish(proc)

    assert code == 0, err[-3000:]
    records = read_records(str(record))
    assert len(records) == 4  # the defender's Brain, in two phases of two runs
    _check_started_by(records, "forkserver", proc.pid)
    first, second = records[:2], records[2:]
    assert len({r["ppid"] for r in first}) == 1  # one server per run...
    assert {r["ppid"] for r in first} != {r["ppid"] for r in second}  # ...and a new one
    assert len({r["recording_flag"] for r in records}) == 2  # each its own run's
    assert all("first" in r["recording_flag"] for r in first)


@pytest.mark.parametrize("method", slow_after(OTHER_METHODS))
def test_a_failing_plugin_fails_the_run(workspace: Workspace, method: str) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        (_TT_BRAIN, "brain: {name: crash:CrashBrain, params: {method: thinking}}"),
    )
    proc = _start(workspace, _env(workspace, method), "experiment-start", str(run_file))
    code, err = _finish(proc)

    assert code == 1, err[-3000:]
    assert "planned crash in thinking" in err
    assert "crash.py" in err  # the plug-in's traceback came across
    status, reason = workspace.instance_status()
    assert status == "error"
    assert "planned crash in thinking" in reason


def _start_acting_run(
    ws: Workspace, method: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Endless episodes (``env``: the command's, else the method's); returns once agent one
    has acted 20 times."""
    run_file = ws.variant(
        "taking_turns_run.yml",
        (_TT_ENV_PARAMS, "params: {discrete: true, max_iter: 1000000, step_delay: 0.001}"),
        (_TT_MUSCLE, "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 20}}"),
    )
    proc = _start(ws, env or _env(ws, method), "experiment-start", str(run_file))
    assert _poll(lambda: (ws.path / "acting").exists(), 30, proc), proc.communicate()[1][-3000:]
    return proc


@pytest.mark.parametrize("method", slow_after(OTHER_METHODS))
def test_sigint_stops_the_run_cleanly(workspace: Workspace, method: str) -> None:
    proc = _start_acting_run(workspace, method)
    os.kill(proc.pid, signal.SIGINT)
    code, err = _finish(proc, 15)

    assert code == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "ignored SIGTERM" not in err
    assert workspace.instance_status() == ("cancelled", "interrupted by SIGINT")
    # the workspace fixture checks that no process of the run (fork server included) is left


def test_sigkill_of_the_executor_leaves_nothing_behind(workspace: Workspace) -> None:
    """With forkserver: the children are the fork server's, not the executor's (spawn's are the
    executor's own, as fork's, which ``test_failure_matrix.py`` kills). Nor a file: the fork
    server's socket (in multiprocessing's temporary directory) is removed with the run's."""
    env = _env(workspace, "forkserver")
    temporary = own_tmpdir(env)
    proc = _start_acting_run(workspace, "forkserver", env)
    titled = [cmd for _, cmd in workspace.processes() if cmd.startswith("palaestra[")]
    assert len(titled) >= 5, titled  # writer, controller, environment, Brains, Muscles
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)

    assert wait_until_gone(workspace.sessions, 5) == []
    assert files_left(temporary) == []  # (the undertaker removes them after the processes)


@pytest.mark.parametrize("method", slow_after(OTHER_METHODS, 1))
def test_sigkill_leaves_no_file_of_a_process_started_afresh(
    workspace: Workspace, method: str
) -> None:
    """An offline external world's directory (its socket) is made in the environment's
    process, which forkserver and spawn start afresh: it names the directory to the
    undertaker on the pipe it was handed, and the undertaker removes it."""
    from tests.system.test_external_environment import kill_mid_offline_run

    kill_mid_offline_run(workspace, _env(workspace, method))


@pytest.mark.slow  # (10 s; the undertaker's looks and burial: tests/unit/test_undertaker.py)
def test_sigkill_of_a_sweep_of_spawned_runs_leaves_nothing_behind(workspace: Workspace) -> None:
    """Under spawn a sweep's runs execute in interpreters of their own (not forked from the
    command): each is handed the pipe to the undertaker, which removes their files (each run's
    directory of sockets and its recording flag)."""
    from tests.system.test_failure_matrix import count

    env = _env(workspace, "spawn")
    temporary = own_tmpdir(env)
    proc = _start(
        workspace,
        env,
        "experiment-start",
        str(EXPERIMENTS / "dummy_run.yml"),
        "--set",
        "schedule.1.phase_1.phase_config.episodes=1000,1001",  # (a minute each)
        "--parallel",
        "2",
    )
    long_phases = (
        "select count(*) from experiment_run_phases where \"index\" = 1 and status = 'running'"
    )
    both_long = _poll(lambda: count(workspace, long_phases) == 2, 30, proc)
    assert both_long, proc.communicate()[1][-3000:]
    assert any(p.name.startswith("palaestra-outcome-") for p in temporary.iterdir())
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)

    assert wait_until_gone(workspace.sessions, 10) == []
    assert files_left(temporary) == []


# --- auto: CUDA initialised in the executor -------------------------------------------------


def _cuda_run(ws: Workspace) -> tuple[Path, Path]:
    record = ws.path / "started.jsonl"
    run_file = ws.variant(
        "multiworker_run.yml",
        (_BRAIN, f"brain: {{name: cuda_at_import:CudaBrain, params: {{record: '{record}'}}}}"),
        (_MUSCLE, f"muscle: {{name: cuda_at_import:CpuMuscle, params: {{record: '{record}'}}}}"),
    )
    return run_file, record


def test_auto_starts_by_forkserver_where_a_plugin_initialised_cuda(workspace: Workspace) -> None:
    run_file, record = _cuda_run(workspace)
    env = _env(workspace, None, fake_torch=True)
    proc = _start(workspace, env, "experiment-start", str(run_file))
    code, err = _finish(proc)

    assert code == 0, err[-3000:]
    assert err.count("CUDA is initialised in the executor") == 1, err[-3000:]
    assert "start by forkserver instead of fork" in err
    records = read_records(str(record))
    assert len(records) == 5
    _check_started_by(records, "forkserver", proc.pid)
    assert workspace.instance_status() == ("finished", "")


def test_fork_fails_where_a_plugin_initialised_cuda(workspace: Workspace) -> None:
    """What ``auto`` avoids: the error a GPU machine gives with fork."""
    run_file, _ = _cuda_run(workspace)
    env = _env(workspace, "fork", fake_torch=True)
    proc = _start(workspace, env, "experiment-start", str(run_file))
    code, err = _finish(proc)

    assert code == 1, err[-3000:]
    assert "Cannot re-initialize CUDA in forked subprocess" in err
    assert "CUDA is initialised in the executor" not in err  # fork was asked for: no warning
    assert workspace.instance_status()[0] == "error"


# --- the start-method matrix: one run per feature that starts processes ----------------------
# (instead of all of tests/system twice more in CI: what a start method changes is how a process
# begins, imports its plug-ins and reports, which one run of each kind shows)


def _games_per_worker(ws: Workspace) -> tuple[Path, int]:
    from tests.system.test_games_per_worker import run_file

    return run_file(ws, workers=2, games=3, episodes=2), 2 * 3 * 2


def _async_world(ws: Workspace) -> tuple[Path, int]:
    from tests.system.test_async_environments import run_file

    return run_file(ws, "{steps: 5}", workers=2), 2 * 2


def _external_world(ws: Workspace) -> tuple[Path, int]:
    from tests.conftest import EXPERIMENTS

    return EXPERIMENTS / "external_world.yml", 2 * 2


def _taking_turns(ws: Workspace) -> tuple[Path, int]:
    return ws.variant("taking_turns_run.yml"), 2


FEATURES = {
    "games per worker": _games_per_worker,
    "asynchronous environment": _async_world,
    "external environment": _external_world,
    "taking turns": _taking_turns,
}
MATRIX = [
    pytest.param(method, feature, id=f"{method}-{feature.replace(' ', '-')}")
    for feature in FEATURES
    for method in OTHER_METHODS
]


@pytest.mark.parametrize(("method", "feature"), slow_after(MATRIX, 2))
def test_each_kind_of_run_under_each_start_method(
    workspace: Workspace, method: str, feature: str
) -> None:
    run_file, episodes = FEATURES[feature](workspace)
    proc = _start(workspace, _env(workspace, method), "experiment-start", str(run_file))
    code, err = _finish(proc)

    assert code == 0, err[-3000:]
    assert workspace.instance_status() == ("finished", "")
    with sqlite3.connect(workspace.store) as conn:
        (ended,) = conn.execute("select count(*) from episodes").fetchone()
    assert ended == episodes


@pytest.mark.parametrize("method", slow_after(METHODS, 2))
def test_a_run_ends_well_where_the_temporary_directory_is_too_deep_for_sockets(
    workspace: Workspace, method: str
) -> None:
    """A ``TMPDIR`` of 90 characters: the run's sockets, an offline external world's and
    (forkserver) the fork server's would pass a socket's 107 bytes there, and every run failed
    ("ipc path ... is longer than 107 characters", "AF_UNIX path too long"); their directories
    are made in /tmp then. Nothing is left in the deep directory but the recording flags'."""
    from tests.conftest import EXPERIMENTS

    env = _env(workspace, method)
    deep = own_tmpdir(env) / ("d" * 80)
    deep.mkdir()
    env["TMPDIR"] = str(deep)
    assert len(str(deep)) >= 90
    proc = _start(workspace, env, "experiment-start", str(EXPERIMENTS / "external_world.yml"))
    code, err = _finish(proc)

    assert code == 0, err[-3000:]
    assert workspace.instance_status() == ("finished", "")
    assert [p.name for p in deep.iterdir()] == [f"palaestra-recording-{os.getuid()}"]
    assert files_left(deep.parent) == []


@pytest.mark.parametrize("method", slow_after(OTHER_METHODS, 0))  # (fork: test_frozen.py)
def test_a_stopped_muscle_is_named_under_each_start_method(
    workspace: Workspace, method: str
) -> None:
    """Liveness (each child's marks, made as it starts) by forkserver and spawn too."""
    from tests.system.test_failure_matrix import count, pid_of, poll
    from tests.system.test_frozen import two_agents

    run_file = two_agents(workspace)
    proc = _start(workspace, _env(workspace, method), "experiment-start", str(run_file))
    target = poll(lambda: pid_of(workspace, "Muscle-beta-0"), 30, proc)
    assert isinstance(target, int)
    assert poll(lambda: count(workspace, "select count(*) from muscle_actions"), 30, proc)
    os.kill(target, signal.SIGSTOP)
    code, err = _finish(proc)

    assert code == 1, err[-3000:]
    assert f"failed: Muscle-beta-0: Stopped: Muscle-beta-0 (pid {target})" in err
