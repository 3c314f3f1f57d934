"""A frozen process ends the run within ``answer_timeout`` + 5 s, named, and costs the healthy
processes none of their rows (issue 21).

Frozen means: stopped (SIGSTOP, as a job scheduler or a debugger does it), stuck in native code
that holds the GIL, stuck in native code that does not, or in an endless Python loop. Each case
checks the exit code, the seconds from the fault to the exit, the stored reason (the frozen
process, not those that waited for it), that nothing is left running (the ``workspace``
fixture), and, for a stopped process, that every healthy environment stored as many steps as
its healthy Muscles did.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS, Workspace, slow_after
from tests.system.test_failure_matrix import count, finish, pid_of, poll
from tests.system.test_limits import DUMMY_BRAIN

pytestmark = pytest.mark.timeout(120)

ANSWER_TIMEOUT = 2.0

TWO_AGENTS = """\
uid: frozen
experiment_uid: frozen
seed: 7
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: world
            params: {discrete: false, max_iter: 1000000}
      agents:
%s
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 2, episodes: 1}
run_config:
  condition: {name: palaestra.experiment:VanillaRunGovernorTerminationCondition, params: {}}
"""
AGENT = """\
        - name: %s
          brain: {name: palaestra.agent:DummyBrain, params: {}}
          muscle: {name: palaestra.agent:DummyMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [world.0, world.1, world.2]
          actuators: [world.0, world.1, world.2]"""


def two_agents(ws: Workspace) -> Path:
    """Agents alpha and beta on one endless environment, two workers; ``answer_timeout`` 2."""
    (ws.path / "palaestra-runtime.yaml").write_text(f"answer_timeout: {ANSWER_TIMEOUT:g}\n")
    path = ws.path / "frozen.yml"
    path.write_text(TWO_AGENTS % "\n".join(AGENT % name for name in ("alpha", "beta")))
    return path


def steps_per_worker(store: Path) -> tuple[dict[int, int], dict[tuple[str, int], int]]:
    """Stored steps of the environment per worker, and of each agent's Muscle per worker."""
    with sqlite3.connect(store) as conn:
        world = dict(conn.execute("select worker, count(*) from world_states group by worker"))
        muscles = {
            (name, worker): n
            for name, worker, n in conn.execute(
                "select a.name, m.worker, count(*) from muscle_actions m "
                "join agents a on a.id = m.agent_id group by a.name, m.worker"
            )
        }
    return world, muscles


STOPPED = [
    pytest.param(title, id=title)
    for title in (
        "Muscle-alpha-1",
        "Environment-world-0",
        "Brain-beta",
        "SimulationController-1",
        "StoreWriter",
    )
]


@pytest.mark.parametrize("title", slow_after(STOPPED))  # the rest: slow, and chaos
def test_a_stopped_process_ends_the_run_named_and_the_others_keep_their_rows(
    workspace: Workspace, title: str
) -> None:
    proc = workspace.start("experiment-start", str(two_agents(workspace)))
    target = poll(lambda: pid_of(workspace, title), 30, proc)
    assert isinstance(target, int), f"{title} never started"
    assert poll(lambda: count(workspace, "select count(*) from muscle_actions"), 30, proc)

    os.kill(target, signal.SIGSTOP)
    code, err, seconds = finish(proc, time.monotonic())

    assert code == 1, err[-3000:]
    assert seconds < ANSWER_TIMEOUT + 5
    assert f"Error: run 'frozen' failed: {title}: Stopped: {title} (pid {target})" in err
    assert "has been stopped for" in err and "Traceback" not in err
    status, reason = workspace.instance_status()
    assert status == "error" and reason.startswith(f"{title}: Stopped: {title} (pid {target})")
    if title == "StoreWriter":  # what it had not written is its own loss
        return
    world, muscles = steps_per_worker(workspace.store)
    for worker in (0, 1):
        healthy = [
            n
            for (agent, w), n in muscles.items()
            if w == worker and title != f"Muscle-{agent}-{worker}"
        ]
        if title == f"Environment-world-{worker}":
            continue  # its own rows are lost with it
        assert healthy, muscles
        for stored in healthy:  # the step in flight at the end may be in one table only
            assert abs(world[worker] - stored) <= 1, (title, world, muscles)


_STUCK_EDITS = {
    "Brain-one": (
        (
            "brain: {name: palaestra.agent:DummyBrain, params: {}}",
            "brain: {name: probes:StuckBrain, params: {how: %s}}",
        ),
    ),
    "Muscle-one-0": (
        (
            "muscle: {name: palaestra.agent:DummyMuscle, params: {",
            "muscle: {name: probes:StuckMuscle, params: {how: %s, ",
        ),
    ),
    "Environment-board-0": (
        ("palaestra.environment.dummy_environment:DummyEnvironment", "probes:StuckEnvironment"),
        ("params: {discrete: true", "params: {how: %s, discrete: true"),
    ),
}

STUCK = [
    pytest.param(silent, how, kind, id=f"{silent}-{how}")
    for silent, how, kind in [
        ("Muscle-one-0", "loop", "Stuck"),
        ("Brain-one", "native", "Frozen"),
        ("Environment-board-0", "sleep", "Stuck"),
        ("Brain-one", "loop", "Stuck"),
        ("Brain-one", "sleep", "Stuck"),
        ("Muscle-one-0", "native", "Frozen"),
        ("Muscle-one-0", "sleep", "Stuck"),
        ("Environment-board-0", "loop", "Stuck"),
        ("Environment-board-0", "native", "Frozen"),
    ]
]


@pytest.mark.parametrize(("silent", "how", "kind"), slow_after(STUCK, 2))
def test_a_plugin_stuck_in_a_step_is_named_after_answer_timeout(
    workspace: Workspace, silent: str, how: str, kind: str
) -> None:
    """In an endless loop (the GIL passed on), in native code holding the GIL (the process's
    control thread cannot run either) or in native code without it."""
    edits = [(old, new.replace("%s", how)) for old, new in _STUCK_EDITS[silent]]
    run_file = workspace.variant("taking_turns_run.yml", *edits)
    (workspace.path / "palaestra-runtime.yaml").write_text("answer_timeout: 2\n")

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 1, result.stderr[-3000:]
    assert result.seconds < 15
    headline = f"Error: run 'taking-turns-run' failed: {silent}: {kind}: {silent} (pid "
    assert headline in result.stderr
    assert "answer_timeout is 2 s" in result.stderr
    status, reason = workspace.instance_status()
    assert status == "error" and reason.startswith(f"{silent}: {kind}: ")


@pytest.mark.slow  # (9 s; the pause rule: tests/unit/test_liveness.py)
def test_a_run_stopped_and_continued_as_a_whole_goes_on(workspace: Workspace) -> None:
    """Ctrl-Z and ``fg`` in a terminal, a job scheduler's suspend and resume (SLURM's
    ``scontrol suspend``), ``docker pause``: every process of the run stops, for longer than
    ``answer_timeout``, and all go on together. Nobody was frozen while the others waited, so
    the run goes on (it failed: "Frozen ... showed no sign of life for 5.0 s"); SIGINT then
    ends it as usual."""
    proc = workspace.start("experiment-start", str(two_agents(workspace)))
    assert poll(lambda: count(workspace, "select count(*) from muscle_actions"), 30, proc)

    os.killpg(proc.pid, signal.SIGSTOP)  # (the command leads its own process group)
    time.sleep(2.5 * ANSWER_TIMEOUT)  # (how long it stays stopped: nothing runs to wait on)
    os.killpg(proc.pid, signal.SIGCONT)
    rows = count(workspace, "select count(*) from muscle_actions")
    assert poll(lambda: count(workspace, "select count(*) from muscle_actions") > rows, 30, proc)
    assert proc.poll() is None, proc.communicate()[1][-3000:]

    os.kill(proc.pid, signal.SIGINT)
    code, err, _ = finish(proc, time.monotonic())
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and "Frozen" not in err and "did not answer" not in err
    assert workspace.instance_status() == ("cancelled", "interrupted by SIGINT")


@pytest.mark.slow
def test_a_run_stopped_as_a_whole_while_a_phase_starts_goes_on(workspace: Workspace) -> None:
    """Ctrl-Z and ``fg`` while a phase's processes start (a Brain loading its model, say), the
    stop longer than ``start_timeout``: nobody was late, so the run goes on and finishes (it
    failed: "Brain-defender, Muscle-defender-0 did not start within 4 s")."""
    (workspace.path / "palaestra-runtime.yaml").write_text("start_timeout: 4\n")
    run_file = workspace.variant(
        "dummy_run.yml", (DUMMY_BRAIN, "brain: {name: limit_plugins:GatedBrain, params: {}}")
    )
    proc = workspace.start("experiment-start", str(run_file))
    assert poll(lambda: (workspace.path / "starting").exists(), 60, proc), proc.communicate()

    os.killpg(proc.pid, signal.SIGSTOP)  # (the command leads its own process group)
    time.sleep(6.0)  # (how long it stays stopped, past start_timeout: nothing runs to wait on)
    os.killpg(proc.pid, signal.SIGCONT)
    (workspace.path / "go").touch()
    code, err, _ = finish(proc, time.monotonic())
    assert code == 0, err[-3000:]
    assert "did not start" not in err and "Traceback" not in err
    assert workspace.instance_status()[0] == "finished"


STOPPED_WAITS = [
    pytest.param(
        "crash:MarkedSetupBrain, params: {seconds: 60, mark: marked}",
        "start_timeout: 3",
        "start within 3 s (the runtime config's start_timeout)",
        id="while-the-phase-starts",
    ),
    pytest.param(
        "limit_plugins:SlowTeardownBrain, params: {seconds: 60, mark: marked}",
        "stop_timeout: 3",
        "stop within 3 s (the runtime config's stop_timeout)",
        id="while-the-phase-stops",
    ),
]


@pytest.mark.parametrize(("brain", "setting", "said"), slow_after(STOPPED_WAITS))
def test_a_process_stopped_while_a_phase_starts_or_stops_is_named_stopped(
    workspace: Workspace, brain: str, setting: str, said: str
) -> None:
    """Stopped while the executor waits for its start or its stop (the liveness judge leaves
    those waits to ``start_timeout`` and ``stop_timeout``): the run failed with "Timeout: ...
    did not start within 3 s (the runtime config's start_timeout: raise it if that is too
    short)", which more time would not have helped. It says the process is stopped now."""
    (workspace.path / "palaestra-runtime.yaml").write_text(f"{setting}\n")
    run_file = workspace.variant("dummy_run.yml", (DUMMY_BRAIN, "brain: {name: " + brain + "}"))
    proc = workspace.start("experiment-start", str(run_file))
    assert poll(lambda: (workspace.path / "marked").exists(), 30, proc), "never marked"
    target = pid_of(workspace, "Brain-defender")
    assert isinstance(target, int)

    os.kill(target, signal.SIGSTOP)
    code, err, _ = finish(proc, time.monotonic())

    assert code == 1, err[-3000:]
    stopped = (
        f"Brain-defender: Stopped: Brain-defender (pid {target}) is stopped (SIGSTOP, a job "
        f"scheduler or a debugger holds it) and did not {said}"
    )
    assert f"Error: run 'dummy-run' failed: {stopped}" in err
    assert "raise it" not in err and "Traceback" not in err
    assert workspace.instance_status() == ("error", stopped)


STOPS_ITS_UNDERTAKER = """\
import os, signal, sys
from palaestra.core.supervision import undertaker

undertaker.ARM_TIMEOUT = 1.0  # (the test need not wait the 5 s)

def stop_the_undertaker():  # in the fork of undertaker.start(), before it runs a line
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is undertaker.start.__code__:
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        frame = frame.f_back

os.register_at_fork(after_in_child=stop_the_undertaker)
from palaestra.cli.entry import main
main()
"""


def test_an_undertaker_stopped_as_it_starts_is_named_and_the_run_goes_on(
    workspace: Workspace,
) -> None:
    """The undertaker stopped (SIGSTOP, aimed at it alone) before it told the command that it
    watches: the command waited for it for ever, and whoever read the command's output with
    it (the undertaker still held the command's pipes). The command goes on without it once
    it has been stopped for ``ARM_TIMEOUT`` (killed, named in a warning); the run finishes."""
    argv = [sys.executable, "-c", STOPS_ITS_UNDERTAKER, "experiment-start"]
    proc = workspace.spawn([*argv, str(EXPERIMENTS / "dummy_run.yml")])
    began = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # (its session: the command and its stopped undertaker)
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the command did not end within 30 s:\n{err[-3000:]}")

    assert proc.returncode == 0, err[-3000:]
    assert time.monotonic() - began < 20
    stopped = "is stopped (SIGSTOP, a job scheduler or a debugger holds it) and did not start"
    assert "Warning: the undertaker (pid " in err, err[-3000:]
    assert f"{stopped} within 1 s; it was killed" in err
    assert workspace.instance_status()[0] == "finished"
