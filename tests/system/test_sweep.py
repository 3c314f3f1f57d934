"""``experiment-start --seeds/--set/--parallel``: a grid of runs, N at a time, one failing."""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
import sqlite3

import pytest
from ruamel.yaml import YAML

from palaestra.experiment.api import prepare_runs
from palaestra.experiment.isolated import ExecutorProcess
from palaestra.experiment.runtime_config import RuntimeConfig
from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(180)

AFTER = "schedule.0.phase_0.agents.0.brain.params.after"
ONE_PHASE = (re.compile(r"  - phase_1:.*?(?=run_config:)", re.S), "")
"""Drops the dummy run's second phase: half the time per run."""
CRASHING_BRAIN = (
    "brain: {name: palaestra.agent.dummy_brain:DummyBrain, params: {}}",
    "brain: {name: probes:CrashingBrain, params: {after: 100}}",
)


def _most_at_once(spans: list[tuple[str, str]]) -> int:
    """The most intervals (ISO start, end) that overlap at one moment."""
    events = []
    for started, finished in spans:
        events.append((dt.datetime.fromisoformat(started), 1))
        events.append((dt.datetime.fromisoformat(finished), -1))
    at_once = most = 0
    for _, change in sorted(events, key=lambda event: (event[0], event[1])):
        at_once += change
        most = max(most, at_once)
    return most


def test_six_runs_two_at_a_time_one_failing(workspace: Workspace) -> None:
    meet = workspace.path / "meet"
    brain = (CRASHING_BRAIN[0], CRASHING_BRAIN[1].replace("}}", f", meet: '{meet}'}}}}"))
    # every run's brain waits, at its first thinking call, until two runs' brains are there:
    # the first two runs meet only if they run side by side
    run_file = workspace.variant("dummy_run.yml", ONE_PHASE, brain)
    # after=1: the brain raises on its second thinking call; 100 is never reached
    values = "100,101,1,102,103,104"
    result = workspace.run(
        "experiment-start",
        str(run_file),
        "--set",
        f"{AFTER}={values}",
        "--parallel",
        "2",
        timeout=150,
    )
    assert result.returncode == 1, result.stderr
    uids = [f"dummy-run-after{value}" for value in values.split(",")]
    failed = "dummy-run-after1"
    assert f"{failed}: error: " in result.stderr
    assert "brain broke after 1 calls" in result.stderr
    table = result.stdout[result.stdout.index("run ") :].splitlines()
    assert table[0].split() == ["run", "overrides", "status", "exit"]
    assert [line.split() for line in table[1:]] == [
        [
            uid,
            f"after={value}",
            "error" if uid == failed else "finished",
            "1" if uid == failed else "0",
        ]
        for uid, value in zip(uids, values.split(","), strict=True)
    ]

    document = YAML(typ="safe").load(run_file.read_text())
    phase_0 = document["schedule"][0]["phase_0"]
    steps = phase_0["environments"][0]["environment"]["params"]["max_iter"]
    agent_steps = len(phase_0["agents"]) * steps * len(document["schedule"])
    with sqlite3.connect(workspace.store) as conn:
        runs = conn.execute(
            "select r.uid, r.overrides, e.uid, i.status, i.started_at, i.finished_at,"
            " (select count(*) from muscle_actions a join agents g on a.agent_id = g.id"
            "  join experiment_run_phases p on g.experiment_run_phase_id = p.id"
            "  where p.experiment_run_instance_id = i.id)"
            " from experiment_runs r join experiments e on r.experiment_id = e.id"
            " join experiment_run_instances i on i.experiment_run_id = r.id order by r.uid"
        ).fetchall()
    assert sorted(uids) == [row[0] for row in runs]
    by_uid = {row[0]: row for row in runs}
    for uid, value in zip(uids, values.split(","), strict=True):
        _, overrides, experiment, status, _, _, actions = by_uid[uid]
        assert json.loads(overrides) == {AFTER: int(value)}
        assert experiment == "dummy-experiments"
        if uid == failed:
            assert status == "error"
        else:
            assert (status, actions) == ("finished", agent_steps)  # every row of the run
    assert _most_at_once([(row[4], row[5]) for row in runs]) <= 2  # never more than --parallel
    assert len(list(meet.iterdir())) == len(uids)  # each run's brain came to the meeting


def test_seeds_and_sets_multiply(workspace: Workspace) -> None:
    result = workspace.run(
        "experiment-start",
        str(workspace.variant("dummy_run.yml", ONE_PHASE)),
        "--seeds",
        "1..2",
        "--set",
        "schedule.0.phase_0.environments.0.environment.params.max_iter=3",
        "--set",
        "schedule.0.phase_0.phase_config.mode=test",
        "--parallel",
        "2",
    )
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(workspace.store) as conn:
        runs = conn.execute("select uid, seed from experiment_runs order by uid").fetchall()
    assert runs == [
        ("dummy-run-seed1-max_iter3-modetest", 1),
        ("dummy-run-seed2-max_iter3-modetest", 2),
    ]
    assert "seed=1 max_iter=3 mode=test  finished  0" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--set", "schedule.0.phase_0.agents.9.brain.params.lr=0.1,0.01"],
            "--set 'schedule.0.phase_0.agents.9.brain.params.lr': "
            f"{EXPERIMENTS / 'dummy_run.yml'} has a list of 2 items at "
            "schedule.0.phase_0.agents; expected an index from 0 to 1, got '9'.",
        ),
        (["--seeds", "5..1"], "--seeds '5..1': the range '5..1' is empty."),
        (["--set", "seed"], "--set 'seed': expected 'dotted.path=value[,value...]'."),
    ],
)
def test_bad_sweep_options_exit_2_before_anything_runs(
    workspace: Workspace, args: list[str], message: str
) -> None:
    result = workspace.run("experiment-start", str(EXPERIMENTS / "dummy_run.yml"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not workspace.store.exists()


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, ""),
        # SIGTERM is raised again once the runs have stopped: the table was left unsaid
        (signal.SIGTERM, 143, "Terminated."),
    ],
)
def test_ctrl_c_stops_the_executing_runs_and_starts_no_more(
    workspace: Workspace, signum: int, code: int, said: str
) -> None:
    proc = workspace.start(
        "experiment-start",
        str(EXPERIMENTS / "dummy_run.yml"),
        "--set",
        "schedule.1.phase_1.phase_config.episodes=1,1000,1001",  # the second runs a minute
        "--parallel",
        "2",
    )
    assert proc.stdout is not None
    line = ""
    while "[1/3]" not in line:  # the first run ended; bounded by the test's timeout
        line = proc.stdout.readline()
        assert line, "the sweep ended before its first run did"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.endswith(f"{said}\n")
    assert "run " in out, err
    rows = [line.split() for line in out[out.index("run ") :].splitlines()[1:]]
    uids = [f"dummy-run-episodes{n}" for n in (1, 1000, 1001)]
    assert rows == [
        [uids[0], "episodes=1", "finished", "0"],
        [uids[1], "episodes=1000", "cancelled", str(code)],
        [uids[2], "episodes=1001", "cancelled", str(code)],
    ]
    with sqlite3.connect(workspace.store) as conn:
        statuses = dict(
            conn.execute(
                "select r.uid, i.status from experiment_runs r"
                " join experiment_run_instances i on i.experiment_run_id = r.id"
            ).fetchall()
        )
    assert (statuses[uids[0]], statuses[uids[1]]) == ("finished", "cancelled")
    # the third started as the first ended, or never: if it did, it was stopped too
    assert statuses.get(uids[2], "cancelled") == "cancelled"


def test_a_run_terminated_as_it_starts_is_said_interrupted_by_sigterm(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's SIGTERM passed on to a run's executor process as it starts, before the
    executor handles signals itself (the sweep's ``_stop``): the run was reported as "the
    executor process of run 'dummy-run' died (signal 15) before it ended". It says the run
    was interrupted by SIGTERM, and that nothing of it was recorded."""
    monkeypatch.chdir(workspace.path)
    config = RuntimeConfig(store_uri=workspace.store_uri)
    ((spec, _),) = prepare_runs(str(EXPERIMENTS / "dummy_run.yml"), [{}], config)
    child = ExecutorProcess(spec, config)
    child.interrupt(signal.SIGTERM)  # (its signals are held until it handles them)
    outcome = child.outcome()
    assert (outcome.exit_code, outcome.message) == (143, "interrupted by SIGTERM"), outcome
    assert not outcome.recorded
