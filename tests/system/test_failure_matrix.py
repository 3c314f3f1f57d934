"""The failure matrix of issue 4: every way a run can break, one parametrized case each.

Families: an exception in each plug-in method (plug-ins in ``tests/plugins/crash.py``); SIGKILL
of each kind of child (a killed Muscle is tested in ``test_failures.py``); SIGKILL of the
executor (no orphans); SIGINT / SIGTERM / a second SIGINT to the executor; bad run files. Each
case checks the exit code, the time to exit, the message and the store. Every case's exit code
and seconds are printed (``pytest -s``) as a table at the end of the module.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import (
    Edit,
    Workspace,
    files_left,
    own_tmpdir,
    slow_after,
    wait_until_gone,
)

pytestmark = pytest.mark.timeout(120)

TIMINGS: list[tuple[str, int | None, float]] = []


@pytest.fixture(scope="module", autouse=True)
def timing_table() -> Iterator[None]:
    """Print every case's exit code and seconds to exit once the module is done."""
    yield
    if TIMINGS:
        print("\n\ncase | exit code | seconds")
        print("--- | --- | ---")
        for case, code, seconds in TIMINGS:
            print(f"{case} | {code} | {seconds:.2f}")


def record(request: pytest.FixtureRequest, family: str, code: int | None, seconds: float) -> None:
    case = f"{family}: {request.node.callspec.id}" if hasattr(request.node, "callspec") else family
    TIMINGS.append((case, code, seconds))
    print(f"\n[matrix] {case} | {code} | {seconds:.2f}")


# --- helpers --------------------------------------------------------------------------------


def count(ws: Workspace, sql: str) -> int:
    """``select count(*) ...`` on the store, 0 while it (or the table) does not exist yet."""
    if not ws.store.exists():
        return 0
    try:
        with sqlite3.connect(ws.store, timeout=1.0) as conn:
            (n,) = conn.execute(sql).fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(n)


def poll(condition: Callable[[], object], timeout: float, proc: subprocess.Popen[str]) -> object:
    """Bounded polling: the condition's first truthy value, or None on timeout or CLI exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    return None


def pid_of(ws: Workspace, title: str) -> int | None:
    return next(
        (pid for pid, cmd in ws.processes() if cmd.startswith(f"palaestra[{title}]")), None
    )


def finish(proc: subprocess.Popen[str], since: float) -> tuple[int, str, float]:
    """Wait for the CLI; its exit code, stderr and the seconds since ``since``."""
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the CLI did not end within 30 s:\n{err[-3000:]}")
    return proc.returncode, err, time.monotonic() - since


MUSCLE_ROWS = "select count(*) from muscle_actions"
WORLD_ROWS = "select count(*) from world_states"


# --- 1a. an exception in a plug-in method -----------------------------------------------------

_TT_BRAIN = "brain: {name: palaestra.agent:DummyBrain, params: {}}"
_TT_MUSCLE = "muscle: {name: palaestra.agent:DummyMuscle, params: {count_upwards: true}}"
_TT_OBJECTIVE = "objective: {name: palaestra.agent:DummyObjective, params: {}}"
_TT_ENV = "palaestra.environment.dummy_environment:DummyEnvironment"
_TT_ENV_PARAMS = "params: {discrete: true, max_iter: 10}"


def _crash_edits(cls: str, method: str) -> tuple[Edit, ...]:
    """Edits of taking_turns_run.yml (2 episodes of 10 steps) putting ``cls`` into agent one
    (or the environment), raising in ``method``."""
    if cls == "CrashEnvironment":
        return (
            (_TT_ENV, "crash:CrashEnvironment"),
            (_TT_ENV_PARAMS, f"params: {{discrete: true, max_iter: 10, method: {method}}}"),
        )
    old, new = {
        "CrashBrain": (_TT_BRAIN, "brain: {name: crash:CrashBrain, params: {method: %s}}"),
        "CrashMuscle": (
            _TT_MUSCLE,
            "muscle: {name: crash:CrashMuscle, params: {method: %s, count_upwards: true}}",
        ),
        "CrashObjective": (
            _TT_OBJECTIVE,
            "objective: {name: crash:CrashObjective, params: {method: %s}}",
        ),
    }[cls]
    return ((old, new % method),)


PLUGIN_CRASHES = [
    pytest.param(cls, method, process, id=f"{cls}.{method}")
    for cls, method, process in [
        ("CrashEnvironment", "start_environment", "Environment-board-0"),
        ("CrashEnvironment", "update", "Environment-board-0"),
        ("CrashEnvironment", "reset", "Environment-board-0"),
        ("CrashBrain", "setup", "Brain-one"),
        ("CrashBrain", "thinking", "Brain-one"),
        ("CrashBrain", "store", "Brain-one"),
        ("CrashMuscle", "setup", "Muscle-one-0"),
        ("CrashMuscle", "propose_actions", "Muscle-one-0"),
        ("CrashMuscle", "update", "Muscle-one-0"),
        ("CrashObjective", "internal_reward", "Muscle-one-0"),
    ]
]
# At the end of the phase, after every step went well: the run fails all the same (it ended
# 'finished' with exit 0, a warning logged).
TEARDOWN_CRASHES = [
    pytest.param(cls, method, process, id=f"{cls}.{method}")
    for cls, method, process in [
        ("CrashMuscle", "teardown", "Muscle-one-0"),
        ("CrashBrain", "teardown", "Brain-one"),
        ("CrashEnvironment", "shutdown", "Environment-board-0"),
    ]
]


@pytest.mark.parametrize(
    ("cls", "method", "process"),
    slow_after(PLUGIN_CRASHES, 3) + slow_after(TEARDOWN_CRASHES, 1),
)
def test_an_exception_in_a_plugin_method_fails_the_run_naming_it(
    request: pytest.FixtureRequest, workspace: Workspace, cls: str, method: str, process: str
) -> None:
    run_file = workspace.variant("taking_turns_run.yml", *_crash_edits(cls, method))
    result = workspace.run("experiment-start", str(run_file), timeout=30)
    record(request, "exception", result.returncode, result.seconds)

    assert result.returncode == 1, result.stderr[-3000:]
    assert result.seconds < 10
    plugin = f"crash:{cls}.{method}"
    headline = f"{process} ({plugin}): RuntimeError: planned crash in {method}"
    err = result.stderr
    assert f"Error: run 'taking-turns-run' failed: {headline}" in err
    assert err.count("Error: run ") == 1 and err.count(plugin) == 1  # one message, once
    traceback_line = 'raise RuntimeError(f"planned crash in {method}")'
    assert traceback_line in err and 'plugins/crash.py", line' in err  # its traceback's tail
    assert "Traceback" not in err  # ... not palaestra's own

    status, reason = workspace.instance_status()
    assert status == "error"
    assert headline in reason and traceback_line in reason
    if method == "reset":  # episode 0 had ended: all of it is kept, also the world_states
        # that the failing environment process still buffered
        assert count(workspace, "select count(*) from muscle_actions where episode = 0") == 10
        assert count(workspace, "select count(*) from world_states where episode = 0") == 10


def test_a_failure_while_another_agent_still_sets_up_is_reported_alone(
    request: pytest.FixtureRequest, workspace: Workspace
) -> None:
    run_file = workspace.variant(
        "taking_turns_run.yml",
        (_TT_BRAIN, "brain: {name: crash:CrashBrain, params: {method: setup}}"),  # agent one
        (_TT_BRAIN, "brain: {name: crash:SlowSetupBrain, params: {seconds: 1.0}}"),  # agent two
    )
    result = workspace.run("experiment-start", str(run_file), timeout=30)
    record(request, "exception while agent two sets up", result.returncode, result.seconds)

    assert result.returncode == 1
    assert workspace.instance_status()[0] == "error"  # recorded all the same, past the writer
    headline = "Brain-one (crash:CrashBrain.setup): RuntimeError: planned crash in setup"
    assert result.stderr.startswith(f"Error: run 'taking-turns-run' failed: {headline}")
    assert "the store writer did not record the end of the run" not in result.stderr


# --- 1b. a child killed with SIGKILL ----------------------------------------------------------

# A killed Muscle: test_failures.py::test_a_killed_muscle_fails_the_run_naming_it.
KILLED_CHILDREN = [
    pytest.param(title, id=title)
    for title in [
        "Environment-myenv-0",
        "Brain-learner",
        "SimulationController-1",
        "StoreWriter",
    ]
]


@pytest.mark.parametrize("title", slow_after(KILLED_CHILDREN, 2))
def test_a_child_killed_with_sigkill_fails_the_run_naming_it(
    request: pytest.FixtureRequest, workspace: Workspace, title: str
) -> None:
    run_file = workspace.variant("multiworker_run.yml", ("max_iter: 20", "max_iter: 1000000"))
    proc = workspace.start("experiment-start", str(run_file))
    target = poll(lambda: pid_of(workspace, title), 30, proc)
    assert isinstance(target, int), f"{title} never started"
    assert poll(lambda: count(workspace, MUSCLE_ROWS) and count(workspace, WORLD_ROWS), 30, proc)
    muscle_rows, world_rows = count(workspace, MUSCLE_ROWS), count(workspace, WORLD_ROWS)

    os.kill(target, signal.SIGKILL)
    code, err, seconds = finish(proc, time.monotonic())
    record(request, "SIGKILL", code, seconds)

    assert code == 1, err[-3000:]
    assert seconds < 10
    killed = f"{title} was killed by SIGKILL"
    assert f"Error: run 'multiworker-run' failed: {title}: ProcessDied: {killed}" in err
    assert err.count("Error: run ") == 1
    status, reason = workspace.instance_status()
    assert status == "error" and killed in reason
    assert count(workspace, MUSCLE_ROWS) >= muscle_rows  # nothing written before is lost
    assert count(workspace, WORLD_ROWS) >= world_rows


# --- 2. the executor killed with SIGKILL: no orphans -----------------------------------------


def test_a_killed_executor_leaves_no_process_behind(
    request: pytest.FixtureRequest, workspace: Workspace
) -> None:
    """Nor a file: the run's directory of sockets and its recording flag are removed (its
    temporary directory here, with a short path: a socket's path has 107 bytes at most)."""
    run_file = workspace.variant("multiworker_run.yml", ("max_iter: 20", "max_iter: 1000000"))
    env = workspace.env()
    temporary = own_tmpdir(env)
    proc = workspace.spawn(
        [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)], env
    )
    assert poll(lambda: pid_of(workspace, "Muscle-learner-1"), 30, proc), "no Muscle started"
    assert poll(lambda: count(workspace, MUSCLE_ROWS), 30, proc), "no rows reached the store"
    assert pid_of(workspace, "Executor") == proc.pid
    muscle_rows = count(workspace, MUSCLE_ROWS)
    assert len(workspace.processes()) >= 8  # executor, writer, conductors, 2 x (env, muscle)...

    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    survivors = wait_until_gone(workspace.sessions, 5)
    seconds = time.monotonic() - killed_at
    proc.communicate(timeout=5)  # the children held its pipes: they are closed now
    record(request, "SIGKILL Executor (until none is left)", proc.returncode, seconds)

    assert proc.returncode == -signal.SIGKILL
    assert survivors == []
    assert seconds < 5
    assert count(workspace, MUSCLE_ROWS) >= muscle_rows
    assert files_left(temporary) == []  # (the undertaker removes them after the processes)


# --- 3. SIGINT and SIGTERM to the executor ---------------------------------------------------


def _start_acting_run(ws: Workspace) -> subprocess.Popen[str]:
    """taking_turns_run.yml with endless episodes (1 ms per step, so a Muscle's first batch of
    1000 rows is seconds away); returns once agent one has acted 20 times."""
    run_file = ws.variant(
        "taking_turns_run.yml",
        (_TT_ENV_PARAMS, "params: {discrete: true, max_iter: 1000000, step_delay: 0.001}"),
        (_TT_MUSCLE, "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 20}}"),
    )
    proc = ws.start("experiment-start", str(run_file))
    assert poll(lambda: (ws.path / "acting").exists(), 30, proc), "agent one never acted"
    return proc


def _pending(pid: int, signum: int) -> bool:
    """Whether ``signum`` is still pending (not yet delivered) for process ``pid``."""
    with open(f"/proc/{pid}/status") as f:
        masks = dict(line.split(":", 1) for line in f if line.startswith(("SigPnd", "ShdPnd")))
    return any(int(mask, 16) & (1 << (signum - 1)) for mask in masks.values())


def _assert_cancelled(ws: Workspace, signum: int) -> None:
    status, reason = ws.instance_status()
    assert status == "cancelled"
    assert reason == f"interrupted by {signal.Signals(signum).name}"


INTERRUPTS = [
    pytest.param(signal.SIGINT, 130, id="SIGINT"),
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
]


@pytest.mark.parametrize(("signum", "exit_code"), INTERRUPTS)
def test_an_interrupted_run_flushes_dumps_and_is_cancelled(
    request: pytest.FixtureRequest, workspace: Workspace, signum: int, exit_code: int
) -> None:
    proc = _start_acting_run(workspace)
    rows_before = count(workspace, MUSCLE_ROWS)

    os.kill(proc.pid, signum)
    code, err, seconds = finish(proc, time.monotonic())
    record(request, "interrupt", code, seconds)

    assert code == exit_code, err[-3000:]
    assert seconds < 5
    name = signal.Signals(signum).name
    assert f"Run 'taking-turns-run' interrupted by {name}; marked cancelled." in err
    assert "Traceback" not in err
    _assert_cancelled(workspace, signum)
    assert count(workspace, "select count(*) from world_states where done") == 0  # no episode end
    with sqlite3.connect(workspace.store) as conn:
        dumped = conn.execute(
            "select a.name, count(*) from brain_states b join agents a on a.id = b.agent_id "
            "group by a.name order by a.name"
        ).fetchall()
    assert dumped == [("one", 1), ("two", 1)]  # every Brain dumped, once
    assert count(workspace, MUSCLE_ROWS) > rows_before  # the buffered rows were flushed


def _in_a_terminal(ws: Workspace, nohup: bool = False) -> tuple[subprocess.Popen[str], int]:
    """The run of :func:`_start_acting_run` in a terminal of its own (a pty: its controlling
    terminal, its standard input and output; its standard error piped), started with SIGHUP
    ignored if ``nohup``; returns once agent one acted, with the terminal's master end, which
    the test reads meanwhile (a full terminal would stall the run) and closes to hang up."""
    import fcntl
    import pty
    import termios

    run_file = ws.variant(
        "taking_turns_run.yml",
        (_TT_ENV_PARAMS, "params: {discrete: true, max_iter: 1000000, step_delay: 0.001}"),
        (_TT_MUSCLE, "muscle: {name: crash:MarkingMuscle, params: {mark: acting, after: 20}}"),
    )
    master, slave = pty.openpty()

    def controlling() -> None:  # (after setsid: the pty becomes the session's terminal)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if nohup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "experiment-start", str(run_file)],
        cwd=ws.path,
        env=ws.env(),
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=controlling,
    )
    ws.sessions.add(proc.pid)
    os.close(slave)
    os.set_blocking(master, False)

    def acted() -> bool:
        try:
            while os.read(master, 1 << 16):
                pass
        except BlockingIOError:
            pass
        return (ws.path / "acting").exists()

    assert poll(acted, 30, proc), "agent one never acted"
    return proc, master


def test_a_closed_terminal_stops_the_run_cleanly(
    request: pytest.FixtureRequest, workspace: Workspace
) -> None:
    """An ssh connection that drops: the terminal hangs up, SIGHUP reaches every process of
    the run (the terminal's foreground process group) and each write to the terminal fails
    (EIO). Every process was killed at once: exit -1, the run left ``running`` with its
    Brains' dumps and the Muscles' buffered rows lost. Now it ends as Ctrl-C ends it: cancelled,
    "interrupted by SIGHUP" (exit 129), every Brain dumped, the rows flushed, and
    ``experiment-resume`` may continue it."""
    proc, master = _in_a_terminal(workspace)
    rows_before = count(workspace, MUSCLE_ROWS)

    os.close(master)  # the terminal hangs up
    code, err, seconds = finish(proc, time.monotonic())
    record(request, "terminal closed", code, seconds)

    assert code == 129, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "Run 'taking-turns-run' interrupted by SIGHUP; marked cancelled." in err
    _assert_cancelled(workspace, signal.SIGHUP)
    with sqlite3.connect(workspace.store) as conn:
        (dumped,) = conn.execute("select count(distinct agent_id) from brain_states").fetchone()
    assert dumped == 2  # every Brain dumped
    assert count(workspace, MUSCLE_ROWS) > rows_before  # the buffered rows were flushed


def test_a_run_started_with_nohup_runs_on_when_the_terminal_closes(
    workspace: Workspace,
) -> None:
    """SIGHUP ignored at the start (``nohup``): the run goes on after the terminal hung up,
    its output to the gone terminal dropped; SIGINT still stops it."""
    proc, master = _in_a_terminal(workspace, nohup=True)
    os.close(master)
    steps = count(workspace, MUSCLE_ROWS)
    assert poll(lambda: count(workspace, MUSCLE_ROWS) > steps, 30, proc), "it stopped"
    os.kill(proc.pid, signal.SIGINT)
    code, err, _ = finish(proc, 30)

    assert code == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    _assert_cancelled(workspace, signal.SIGINT)


def test_a_second_sigint_stops_at_once_without_orphans(
    request: pytest.FixtureRequest, workspace: Workspace
) -> None:
    proc = _start_acting_run(workspace)
    os.kill(proc.pid, signal.SIGINT)
    first_at = time.monotonic()
    assert poll(lambda: not _pending(proc.pid, signal.SIGINT), 5, proc), "SIGINT not delivered"
    assert proc.poll() is None, "the run ended before the second SIGINT"
    os.kill(proc.pid, signal.SIGINT)
    code, err, seconds = finish(proc, first_at)
    survivors = wait_until_gone(workspace.sessions, 5)
    record(request, "SIGINT twice", code, seconds)

    assert code == 130, err[-3000:]
    assert seconds < 5
    assert "Interrupted again: stopping at once." in err
    assert survivors == []
    _assert_cancelled(workspace, signal.SIGINT)


def test_an_interrupted_run_stops_without_sigkill(
    request: pytest.FixtureRequest, workspace: Workspace
) -> None:
    proc = _start_acting_run(workspace)
    os.kill(proc.pid, signal.SIGINT)
    code, err, seconds = finish(proc, time.monotonic())
    record(request, "SIGINT, stopped without SIGKILL", code, seconds)

    assert code == 130
    assert "ignored SIGTERM" not in err, err


# --- 4. bad run files: exit 2 before any process starts --------------------------------------

BAD_RUN_FILES = [
    pytest.param(
        "dummy_run.yml",
        [("mode: train", "mode: train: test")],
        ["variant.yml:33: invalid YAML: mapping values are not allowed here."],
        id="yaml-syntax-error",
    ),
    pytest.param(
        "dummy_run.yml",
        [("episodes: 1", "episodez: 1")],
        [
            "variant.yml:35: schedule[0].phase_0.phase_config.episodez: unknown key 'episodez'",
            "Did you mean 'episodes'?",
        ],
        id="unknown-key",
    ),
    pytest.param(
        "dummy_run.yml",
        [("seed: 42", "seed: forty-two")],
        ["variant.yml:5: seed: expected an integer >= 0, got 'forty-two'."],
        id="wrong-type",
    ),
    pytest.param(
        "dummy_run.yml",
        [
            (
                "        - name: attacker\n"
                "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"
                "          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n"
                "          objective: {name: palaestra.agent.dummy_objective:DummyObjective, "
                "params: {params: 1}}\n",
                "        - name: attacker\n"
                "          brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}\n"
                "          muscle: {name: palaestra.agent.dummy_muscle:DummyMuscle, params: {}}\n",
            )
        ],
        ["variant.yml:21: schedule[0].phase_0.agents[1]: missing required key 'objective'."],
        id="missing-required-key",
    ),
    pytest.param(
        "dummy_run.yml",
        [("palaestra.agent.dummy_brain:DummyBrain", "palaestra.agent.dumy_brain:DummyBrain")],
        [
            "variant.yml:16: schedule[0].phase_0.agents[0].brain.name: "
            "no module 'palaestra.agent.dumy_brain'"
        ],
        id="unknown-module",
    ),
    pytest.param(
        "dummy_run.yml",
        [("palaestra.agent.dummy_brain:DummyBrain", "palaestra.agent.dummy_brain:DummyBrian")],
        [
            "variant.yml:16: schedule[0].phase_0.agents[0].brain.name: "
            "no class 'palaestra.agent.dummy_brain:DummyBrian'",
            "Did you mean 'DummyBrain'?",
        ],
        id="unknown-class",
    ),
    pytest.param(
        "dummy_run.yml",
        [("palaestra.agent.dummy_brain:DummyBrain", "broken_plugin:BrokenBrain")],
        [
            "variant.yml:16: schedule[0].phase_0.agents[0].brain.name: "
            "module 'broken_plugin' failed to import: ImportError: needs the frobnicator"
        ],
        id="module-raising-ImportError",
    ),
    pytest.param(
        "dummy_run.yml",
        [("sensors: [myenv.5, myenv.6", "sensors: [myenv.5, myenv.16")],
        [
            "variant.yml:25: schedule[0].phase_0.agents[1].sensors[1]: "
            "environment 'myenv' has no sensor 'myenv.16'."
        ],
        id="sensor-the-environment-lacks",
    ),
    pytest.param(
        "dummy_run.yml",
        [("actuators: [myenv.0, myenv.1", "actuators: [myenv.0, myenv.10")],
        [
            "variant.yml:20: schedule[0].phase_0.agents[0].actuators[1]: "
            "environment 'myenv' has no actuator 'myenv.10'."
        ],
        id="actuator-the-environment-lacks",
    ),
    pytest.param(
        "dummy_run.yml",
        [("name: attacker", "name: defender")],
        [
            "variant.yml:21: schedule[0].phase_0.agents[1].name: "
            "agent name 'defender' is used twice in this phase."
        ],
        id="duplicate-agent-names",
    ),
    pytest.param(
        "dummy_run.yml",
        [(re.compile(r"schedule:\n.*?(?=run_config:)", re.S), "schedule: []\n")],
        ["variant.yml:7: schedule: expected a non-empty list, got an empty list."],
        id="empty-schedule",
    ),
    pytest.param(
        "dummy_run.yml",
        [("worker: 1", "worker: 0")],
        [
            "variant.yml:34: schedule[0].phase_0.phase_config.worker: "
            "expected an integer >= 1, got 0."
        ],
        id="worker-0",
    ),
    pytest.param(
        "multiworker_run.yml",
        [("episodes: 1", "episodes: -3")],
        [
            "variant.yml:33: schedule[1].test.phase_config.episodes: "
            "expected an integer >= 1, got -3."
        ],
        id="negative-episodes-in-a-later-phase",
    ),
]


@pytest.mark.parametrize(("source", "edits", "expected"), BAD_RUN_FILES)
def test_a_bad_run_file_exits_2_before_any_process_starts(
    request: pytest.FixtureRequest,
    workspace: Workspace,
    source: str,
    edits: list[Edit],
    expected: list[str],
) -> None:
    run_file = workspace.variant(source, *edits)
    result = workspace.run("experiment-start", str(run_file), timeout=30)
    record(request, "bad run file", result.returncode, result.seconds)

    assert result.returncode == 2, result.stderr[-3000:]
    for fragment in expected:
        assert fragment in result.stderr
    assert result.stderr.startswith(f"Error: {run_file}:")  # the file's path as given
    assert "Traceback" not in result.stderr
    assert not workspace.store.exists()  # nothing started, nothing stored
    assert not (workspace.path / "_outputs").exists()
