"""Resume (issue 12, item 7): stale instances of a killed executor, ``experiment-resume``."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from palaestra.core.description.limits import STALE_AFTER
from palaestra.core.nonfinite import to_strict_json
from palaestra.store import rows
from tests.conftest import Workspace, wait_until_gone

pytestmark = pytest.mark.timeout(120)


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


def poll(condition: Callable[[], object], timeout: float) -> object:
    """Bounded polling: the condition's first truthy value, or None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    return None


def kill_executor(ws: Workspace, proc: subprocess.Popen[str]) -> None:
    """SIGKILL the executor (the CLI process); its children die with it."""
    os.kill(proc.pid, signal.SIGKILL)
    assert wait_until_gone(ws.sessions, 10) == []
    proc.communicate(timeout=5)


def list_status(ws: Workspace) -> str:
    listed = ws.run("experiment-list")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


RUN_FILE = Path(__file__).with_name("resume_run.yml")
"""A deterministic run (tests/plugins/resume_plugins.py): 400 train episodes of 10 steps, then
2 test episodes; 1 worker. Step rows reach the store in batches of 1000 (world states, muscle
actions: a batch is in when the 100th episode has played its last step); the episodes rows at
the first episode end a second after the last push, and when the phase's controller stops.
Each step takes at least 0.5 ms (the environment's ``step_delay``), so the train phase lasts
2 s or more: a kill after the first batch lands in it also where a loaded machine's writer is a
second behind."""


def first_difference(got: list[Any], expected: list[Any]) -> str:
    """Where two row lists differ first, for a failure message."""
    for at, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return f"row {at}: {a} != {b}"
    return f"{len(got)} rows != {len(expected)} rows"


def view(ws: Workspace) -> tuple[list[dict[str, Any]], ...]:
    """The run's world states, muscle actions and episode rewards (the run's view: no ids,
    instances or times)."""
    return (
        list(rows.world_states("resume-run", store_uri=ws.store_uri)),
        list(rows.muscle_actions("resume-run", store_uri=ws.store_uri)),
        list(rows.episode_rewards("resume-run", store_uri=ws.store_uri)),
    )


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], ...]:
    ws = Workspace(tmp_path_factory.mktemp("uninterrupted"))
    done = ws.run("experiment-start", "-q", str(RUN_FILE))
    assert done.returncode == 0, done.stderr[-3000:]
    return view(ws)


EPISODES_DONE = "select count(*) from episodes"
WORLD_STATES = "select count(*) from world_states"


def _start_and_wait(ws: Workspace) -> subprocess.Popen[str]:
    """Start the run; return once its first batch of world states is in the store."""
    proc = ws.start("experiment-start", "-q", str(RUN_FILE))
    assert poll(lambda: count(ws, WORLD_STATES) >= 1000, 30), "no world states were stored"
    return proc


def _resume(ws: Workspace) -> str:
    """Resume the run; where it resumed (``phase P, episode E``)."""
    resumed = ws.run("experiment-resume", "resume-run")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    found = re.search(
        r"Resuming instance \S+ \((\w+)\) of run 'resume-run' at (phase \d+, episode \d+)",
        resumed.stderr,
    )
    assert found, resumed.stderr[-3000:]
    return found.group(2)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_run_resumed_after_sigint_equals_the_uninterrupted_one(
    workspace: Workspace, uninterrupted: tuple[list[Any], ...]
) -> None:
    proc = _start_and_wait(workspace)
    os.kill(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert workspace.instance_status()[0] == "cancelled"
    done = count(workspace, EPISODES_DONE)  # stored as the interrupted phase stopped
    # The 1000th world state is the last step of the 100th episode: its batch can reach the
    # store before that episode's end is recorded, and a SIGINT between the two leaves 99
    # episodes completed (the resume replays the 100th). The 99th ended before step 1000.
    assert 99 <= done < 400

    assert _resume(workspace) == f"phase 0, episode {done}"

    for got, expected in zip(view(workspace), uninterrupted, strict=True):
        assert got == expected, first_difference(got, expected)
    with sqlite3.connect(workspace.store) as conn:
        links = conn.execute(
            "select status, resumed_from_id from experiment_run_instances order by id"
        ).fetchall()
    assert [status for status, _ in links] == ["cancelled", "finished"]
    assert links[1][1] is not None


MUSCLE_ACTIONS = "select count(*) from muscle_actions"


def first_incomplete(ws: Workspace) -> int:
    """The first episode of the (only) instance's phase 0 whose ``episodes`` row, last world
    state (step 10) or last action (flagged done) the store lacks."""
    with sqlite3.connect(ws.store) as conn:
        found = [
            {e for (e,) in conn.execute(sql)}
            for sql in (
                "select episode from episodes",
                "select episode from world_states where step = 10",
                "select episode from muscle_actions where done",
            )
        ]
    episode = 0
    while all(episode in episodes for episodes in found):
        episode += 1
    return episode


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_run_resumed_after_kill_9_keeps_its_completed_episodes_and_equals_the_uninterrupted_one(
    workspace: Workspace, uninterrupted: tuple[list[Any], ...]
) -> None:
    proc = workspace.start("experiment-start", "-q", str(RUN_FILE))
    wanted = ((EPISODES_DONE, 1), (WORLD_STATES, 1000), (MUSCLE_ACTIONS, 1000))
    assert poll(lambda: all(count(workspace, sql) >= n for sql, n in wanted), 30), (
        "no episodes row and first batch of step rows were stored"
    )
    kill_executor(workspace, proc)
    (before,) = rows.runs(run="resume-run", store_uri=workspace.store_uri)
    assert before["status"] == "running"  # its heartbeat is fresh: not stale yet
    stored = count(workspace, EPISODES_DONE)  # flushed each second, before the executor died
    assert 1 <= stored < 400
    expected = first_incomplete(workspace)
    refused = workspace.run("experiment-resume", "resume-run")
    if "stale" not in list_status(workspace):  # its heartbeat is fresh: still running
        assert refused.returncode == 2 and "is running" in refused.stderr, refused.stderr
    # the executor is dead, nothing writes the heartbeat: age it as STALE_AFTER seconds would
    with sqlite3.connect(workspace.store) as conn:
        conn.execute(
            "update experiment_run_instances set heartbeat_at = datetime(heartbeat_at, ?)",
            (f"-{STALE_AFTER + 1} seconds",),
        )
    assert "stale" in list_status(workspace)
    assert workspace.instance_status()[0] == "running"  # as the store was left

    # it starts at the first episode whose episodes row or last step rows the store lacked
    assert 0 < expected <= stored
    assert _resume(workspace) == f"phase 0, episode {expected}"

    for got, expected in zip(view(workspace), uninterrupted, strict=True):
        assert got == expected, first_difference(got, expected)
    with sqlite3.connect(workspace.store) as conn:
        (killed, resumed_from) = (
            conn.execute(
                "select status, reason from experiment_run_instances order by id"
            ).fetchall()[0],
            conn.execute(
                "select resumed_from_id from experiment_run_instances order by id"
            ).fetchall()[1][0],
        )
    assert killed == ("error", "its executor died (no heartbeat); continued by experiment-resume")
    assert resumed_from is not None
    again = workspace.run("experiment-resume", "resume-run")
    assert again.returncode == 2 and "is finished" in again.stderr, again.stderr


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_run_stopped_longer_than_its_heartbeat_is_stopped_not_stale_and_goes_on(
    workspace: Workspace, uninterrupted: tuple[list[Any], ...]
) -> None:
    """Ctrl-Z (every process of the run stopped) for longer than ``STALE_AFTER``: the instance
    is shown ``stopped``, not ``stale``, and ``experiment-resume`` refuses it (a second run
    beside the stopped one would record the instance twice); continued, it finishes."""
    proc = _start_and_wait(workspace)
    group = os.getpgid(proc.pid)
    os.killpg(group, signal.SIGSTOP)
    os.waitpid(proc.pid, os.WUNTRACED)  # (the executor stopped; its writer with it)
    try:
        # nothing writes the heartbeat while stopped: age it as STALE_AFTER seconds would
        with sqlite3.connect(workspace.store) as conn:
            conn.execute(
                "update experiment_run_instances set heartbeat_at = datetime(heartbeat_at, ?)",
                (f"-{STALE_AFTER + 1} seconds",),
            )
        listed = list_status(workspace)
        assert "stopped" in listed and "stale" not in listed, listed
        refused = workspace.run("experiment-resume", "resume-run")
        assert refused.returncode == 2, refused.stderr
        assert "is stopped" in refused.stderr and f"kill -CONT -- -{group}" in refused.stderr
    finally:
        os.killpg(group, signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    assert workspace.instance_status()[0] == "finished"
    for got, expected in zip(view(workspace), uninterrupted, strict=True):
        assert got == expected, first_difference(got, expected)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_resumed_phase_of_several_games_starts_from_the_newest_dump(
    workspace: Workspace,
) -> None:
    """With ``envs_per_worker`` 4 every game's episode end dumps the Brain, four dumps an
    episode number: the resumed phase took the dump whose index was its first episode's (one
    of about a quarter of the way), a Brain far behind where it stopped. It takes the phase's
    newest, as for several workers (docs/replay-resume.md)."""
    text = RUN_FILE.read_text().replace(
        "        episodes: 400\n", "        episodes: 100\n        envs_per_worker: 4\n"
    )
    run_file = workspace.path / "games.yml"
    run_file.write_text(text)
    proc = workspace.start("experiment-start", "-q", str(run_file))
    assert poll(lambda: count(workspace, EPISODES_DONE) >= 40, 30), "no episodes were stored"
    os.kill(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert _resume(workspace).startswith("phase 0, episode ")

    with sqlite3.connect(workspace.store) as conn:
        newest = conn.execute(
            "select max(b.id) from brain_states b join agents a on b.agent_id = a.id "
            "join experiment_run_phases p on a.experiment_run_phase_id = p.id "
            "join experiment_run_instances i on p.experiment_run_instance_id = i.id "
            'where i.resumed_from_id is null and p."index" = 0'
        ).fetchone()[0]
        (loaded,) = conn.execute(
            "select a.loaded_from from agents a "
            "join experiment_run_phases p on a.experiment_run_phase_id = p.id "
            "join experiment_run_instances i on p.experiment_run_instance_id = i.id "
            'where i.resumed_from_id is not null and p."index" = 0'
        ).fetchone()
    assert json.loads(loaded)["brain_state_id"] == newest


PRETRAINED = """\
uid: pretrained-run
experiment_uid: resume-experiments
seed: 11
version: "0.1"
schedule:
  - learn:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: board
            params: {discrete: true, max_iter: 10}
      agents:
        - name: one
          brain: {name: resume_plugins:TotalBrain, params: {}}
          muscle: {name: resume_plugins:TotalMuscle, params: {}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [board.0, board.1]
          actuators: [board.0, board.1]
      simulation:
        name: palaestra.simulation:VanillaSimController
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 5}
  - again:
      agents:
        - name: one
          brain: {name: resume_plugins:PretrainedTotalBrain, params: {}}
          muscle: {name: resume_plugins:FailOnceMuscle, params: {flag: FLAG, after: 65}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [board.0, board.1]
          actuators: [board.0, board.1]
          replay: [{phase: 0}]
      phase_config: {mode: train, episodes: 12}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


def uninterrupted_and_resumed(tmp_path: Path, template: str, run: str, at: str) -> list[Workspace]:
    """``template`` (its ``FLAG``: a file whose presence fails a FailOnceMuscle once) run
    uninterrupted, and run failing once and resumed ``at`` (``phase P, episode E``): the two
    workspaces."""
    flag = tmp_path / "fail"
    text = template.replace("FLAG", str(flag))
    spaces = []
    for name, failing in (("uninterrupted", False), ("resumed", True)):
        ws = Workspace(tmp_path / name)
        ws.path.mkdir()
        (ws.path / "run.yml").write_text(text)
        if failing:
            flag.touch()
            failed = ws.run("experiment-start", "-q", "run.yml")
            assert failed.returncode == 1, failed.stderr[-3000:]
            assert "failing once" in failed.stderr
            flag.unlink()
            resumed = ws.run("experiment-resume", run)
            assert resumed.returncode == 0, resumed.stderr[-3000:]
            assert f"at {at}" in resumed.stderr, resumed.stderr[-3000:]
        else:
            done = ws.run("experiment-start", "-q", "run.yml")
            assert done.returncode == 0, done.stderr[-3000:]
        spaces.append(ws)
    return spaces


def test_a_pre_trained_phase_resumed_after_a_failure_is_not_pre_trained_again(
    tmp_path: Path,
) -> None:
    """Its Brain resumes from its dump, which holds its pre-training; pre-trained again, the
    resumed run's actions differed from the uninterrupted run's (and it finished, exit 0)."""
    spaces = uninterrupted_and_resumed(
        tmp_path, PRETRAINED, "pretrained-run", "phase 1, episode 6"
    )
    views = [list(rows.muscle_actions("pretrained-run", store_uri=ws.store_uri)) for ws in spaces]
    assert len(views[1]) == len(views[0]) == 170
    assert views[1] == views[0], first_difference(views[1], views[0])


EVALUATING = """\
uid: evaluating-run
experiment_uid: resume-experiments
seed: 7
version: "0.1"
schedule:
  - learn:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: board
            params: {discrete: true, max_iter: 5}
      agents:
        - name: one
          brain: {name: resume_plugins:EvaluatingTotalBrain, params: {start: 1.0, nan_at: 1}}
          muscle: {name: resume_plugins:FailOnceMuscle, params: {flag: FLAG, after: 33}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [board.0, board.1]
          actuators: [board.0, board.1]
      simulation:
        name: palaestra.simulation:VanillaSimController
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 20, evaluate_every: 2}
run_config:
  condition:
    name: palaestra.experiment:AgentEvaluationObjectiveTerminationCondition
    params:
      agents:
        one:
          plateau: {metric: score, direction: maximize, min_delta: 0.01, patience: 2,
                    min_evaluations: 1, window: 1}
"""


def test_a_phase_ended_by_its_evaluations_resumed_after_a_failure_ends_where_it_would_have(
    tmp_path: Path,
) -> None:
    """Evaluations after every 2 training episodes (5 steps each), scored 1.0, NaN (not
    counted), 1.0, 1.0: the plateau rule (patience 2) ends the phase after evaluation 3, 8
    training episodes. The run fails in training episode 4 (stored 6: step 33 of the Muscle),
    after evaluation 1, and is resumed there: its condition is told evaluations 0 and 1 from
    the store, and the phase ends after evaluation 3 as the uninterrupted one did. The
    condition started from nothing: the resumed phase ended 2 evaluations later, after 10
    training episodes (exit 0, finished)."""
    spaces = uninterrupted_and_resumed(
        tmp_path, EVALUATING, "evaluating-run", "phase 0, episode 4"
    )
    episodes = [
        [
            {k: v for k, v in row.items() if k not in ("started_at", "ended_at")}
            for row in rows.episodes("evaluating-run", store_uri=ws.store_uri)
        ]
        for ws in spaces
    ]
    assert [row["episode"] for row in episodes[0]] == list(range(12))  # 8 + 4 rollouts
    assert episodes[1] == episodes[0], first_difference(episodes[1], episodes[0])
    actions = [
        list(rows.muscle_actions("evaluating-run", store_uri=ws.store_uri)) for ws in spaces
    ]
    assert actions[1] == actions[0], first_difference(actions[1], actions[0])
    # the results, as the run's view keeps them: those of both instances, NaN a float
    evaluations = [
        [
            {k: json.dumps(to_strict_json(v)) for k, v in row.items() if k != "at"}
            for row in rows.evaluations("evaluating-run", store_uri=ws.store_uri)
        ]
        for ws in spaces
    ]
    assert evaluations[1] == evaluations[0], first_difference(evaluations[1], evaluations[0])
    found = rows.evaluations("evaluating-run", store_uri=spaces[1].store_uri, expand=True)
    assert [(r["evaluation"], r["training_episodes"], r["episode"]) for r in found] == [
        (0, 2, 2),
        (1, 4, 5),
        (2, 6, 8),
        (3, 8, 11),
    ]
    scores = [r["metric.score"] for r in found]
    assert math.isnan(scores[1]) and [scores[0], *scores[2:]] == [1.0, 1.0, 1.0]
    assert [r["metric.total"] for r in found] == [30.0, 60.0, 90.0, 120.0]  # the Brain's state
    exported = spaces[1].run(
        "results", "evaluating-run", "--table", "evaluations", "--expand", "--format", "json"
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert [r["metric.score"] for r in json.loads(exported.stdout)] == [1.0, "nan", 1.0, 1.0]


def test_a_phase_its_evaluations_had_ended_when_the_run_stopped_resumes_to_its_end_at_once(
    tmp_path: Path,
) -> None:
    """The executor was killed after the evaluation that ended the phase and before the phase's
    end was recorded (made here by marking the finished run so): the resumed phase's condition
    is told the 4 results, which end it, and it plays no episode, exit 0, ``finished``."""
    ws = Workspace(tmp_path / "ended")
    ws.path.mkdir()
    (ws.path / "run.yml").write_text(EVALUATING.replace("FLAG", str(tmp_path / "no-flag")))
    done = ws.run("experiment-start", "-q", "run.yml")
    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(ws.store) as conn:
        conn.execute("update experiment_run_instances set status = 'error'")
        conn.execute("update experiment_run_phases set status = 'running', finished_at = null")
    resumed = ws.run("experiment-resume", "evaluating-run")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at phase 0, episode 8" in resumed.stderr
    shown = rows.runs(store_uri=ws.store_uri)
    assert [r["status"] for r in shown] == ["error", "finished"]
    assert len(rows.episodes("evaluating-run", store_uri=ws.store_uri)) == 12  # none more
    own = rows.episodes(
        "evaluating-run", store_uri=ws.store_uri, instance=shown[1]["instance_uid"]
    )
    assert list(own) == []


BESIDE = """\
uid: beside-run
experiment_uid: resume-experiments
seed: 5
version: "0.1"
schedule:
  - learn:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: board
            params: {discrete: true, max_iter: 10}
      agents:
        - name: one
          brain: {name: resume_plugins:TotalBrain, params: {}}
          muscle: {name: beside:BesideMuscle, params: {flag: FLAG, after: 15}}
          objective: {name: palaestra.agent:DummyObjective, params: {}}
          sensors: [board.0, board.1]
          actuators: [board.0, board.1]
      simulation:
        name: palaestra.simulation:VanillaSimController
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {}
      phase_config: {mode: train, worker: 1, episodes: 3}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {}
"""


def test_a_run_started_by_a_relative_path_resumes_from_another_directory(tmp_path: Path) -> None:
    """The store kept the run file's path as given (``run.yml``), and ``experiment-resume``
    looks for the plug-ins beside the run file: resumed from another directory it looked in
    that one and could not import the Muscle (exit 2). The store keeps the absolute path."""
    started, elsewhere = Workspace(tmp_path / "project"), Workspace(tmp_path / "elsewhere")
    started.path.mkdir()
    elsewhere.path.mkdir()
    flag = tmp_path / "fail"
    flag.touch()
    (started.path / "run.yml").write_text(BESIDE.replace("FLAG", str(flag)))
    (started.path / "beside.py").write_text(
        "from resume_plugins import FailOnceMuscle as BesideMuscle\n"
    )
    failed = started.run("experiment-start", "-q", "run.yml")
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "failing once" in failed.stderr
    flag.unlink()
    config = elsewhere.path / "runtime.yml"
    config.write_text(f"store_uri: {started.store_uri}\n")

    resumed = elsewhere.run("-c", str(config), "experiment-resume", "beside-run")

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at phase 0, episode 1" in resumed.stderr, resumed.stderr[-3000:]
    with sqlite3.connect(started.store) as conn:
        (file,) = conn.execute("select file from experiment_runs").fetchone()
    assert file == str(started.path / "run.yml")


AGAIN = PRETRAINED[PRETRAINED.index("  - again:") : PRETRAINED.index("run_config:")]
UNDUMPED = PRETRAINED.replace("pretrained-run", "undumped-run").replace(
    AGAIN,
    AGAIN.replace("  - again:", "  - check:")
    .replace("PretrainedTotalBrain", "TrainDumpTotalBrain")
    .replace("after: 65", "after: 25")
    .replace("          replay: [{phase: 0}]\n", "")
    .replace("{mode: train, episodes: 12}", "{mode: test, episodes: 4}"),
)
"""PRETRAINED's train phase, then a test phase of a Brain that stores no dump there, failing
in its third episode."""


def test_a_resumed_phase_whose_brain_has_not_dumped_in_it_starts_from_the_phase_before(
    tmp_path: Path,
) -> None:
    """A test phase whose Brain stores no dump there (it learns nothing), stopped after two
    episodes: resumed, its Brain and Muscles started from nothing, not from the train phase's
    dumps the phase had started from, and acted untrained (finished, exit 0). They start from
    the dumps the interrupted phase started from."""
    spaces = uninterrupted_and_resumed(tmp_path, UNDUMPED, "undumped-run", "phase 1, episode 2")
    views = [list(rows.muscle_actions("undumped-run", store_uri=ws.store_uri)) for ws in spaces]
    with sqlite3.connect(spaces[1].store) as conn:
        (loaded,) = conn.execute(
            "select a.loaded_from from agents a join experiment_run_phases p "
            'on a.experiment_run_phase_id = p.id where p."index" = 1 order by a.id desc limit 1'
        ).fetchone()
    assert len(views[1]) == len(views[0]) == 90
    assert views[1] == views[0], first_difference(views[1], views[0])
    assert loaded is not None and json.loads(loaded)["phase"] == 0, loaded


SWEPT = (
    BESIDE.replace("beside-run", "swept-run")
    .replace("max_iter: 10", "max_iter: 5")
    .replace("beside:BesideMuscle", "resume_plugins:FailOnceMuscle")
    .replace("after: 15", "after: 13")
    .replace("episodes: 3", "episodes: 6")
)
"""A run of a sweep (``--seeds 2 --set ...max_iter=4``: episodes of 4 steps) that fails in its
fourth episode (step 13 of its Muscle)."""


def test_a_resumed_run_of_a_sweep_keeps_its_overrides(tmp_path: Path) -> None:
    """The resume recorded the run again without its overrides: ``experiment_runs.overrides``
    of ``swept-run-seed2-max_iter4`` became NULL (its bands in ``plot``, the MLflow export's
    params and ``results`` lost them), exit 0. The resumed run keeps them, and its view
    equals the uninterrupted run's of the same sweep."""
    flag = tmp_path / "fail"
    sweep = (
        "--seeds",
        "2",
        "--set",
        "schedule.0.learn.environments.0.environment.params.max_iter=4",
    )
    uid = "swept-run-seed2-max_iter4"
    spaces = []
    for name, failing in (("uninterrupted", False), ("resumed", True)):
        ws = Workspace(tmp_path / name)
        ws.path.mkdir()
        (ws.path / "run.yml").write_text(SWEPT.replace("FLAG", str(flag)))
        if failing:
            flag.touch()
        started = ws.run("experiment-start", "-q", "run.yml", *sweep)
        assert started.returncode == (1 if failing else 0), started.stderr[-3000:]
        if failing:
            flag.unlink()
            resumed = ws.run("experiment-resume", uid)
            assert resumed.returncode == 0, resumed.stderr[-3000:]
            assert "at phase 0, episode 3" in resumed.stderr, resumed.stderr[-3000:]
        spaces.append(ws)
    recorded = []
    for ws in spaces:
        with sqlite3.connect(ws.store) as conn:
            recorded.append(
                conn.execute("select uid, seed, overrides from experiment_runs").fetchall()
            )
    assert recorded[1] == recorded[0], recorded
    ((_, seed, overrides),) = recorded[1]
    assert seed == 2 and json.loads(overrides) == {
        "seed": 2,
        "schedule.0.learn.environments.0.environment.params.max_iter": 4,
    }
    views = [list(rows.muscle_actions(uid, store_uri=ws.store_uri)) for ws in spaces]
    assert len(views[1]) == len(views[0]) == 24
    assert views[1] == views[0], first_difference(views[1], views[0])


def test_a_recorded_replay_of_a_resumed_run_keeps_the_run_s_view(tmp_path: Path) -> None:
    """``experiment-replay RUN --record`` of a resumed run (it replays the newest instance,
    the resumed one) made the copy the run's newest instance, continuing nothing: the run's
    view (``results``, the query functions) lost the episodes the interrupted instance had
    completed (episodes 2 to 5 of 0 to 5 left) after a replay "identical to the record", exit
    0. The copy stands in for the instance it replays: the view is what it was."""
    ws = Workspace(tmp_path / "resumed")
    ws.path.mkdir()
    flag = tmp_path / "fail"
    (ws.path / "run.yml").write_text(SWEPT.replace("FLAG", str(flag)))
    flag.touch()
    failed = ws.run("experiment-start", "-q", "run.yml")
    assert failed.returncode == 1, failed.stderr[-3000:]
    flag.unlink()
    resumed = ws.run("experiment-resume", "swept-run")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at phase 0, episode 2" in resumed.stderr, resumed.stderr[-3000:]

    def run_view() -> list[list[dict[str, Any]]]:
        found = [
            rows.world_states("swept-run", store_uri=ws.store_uri),
            rows.muscle_actions("swept-run", store_uri=ws.store_uri),
            rows.episode_rewards("swept-run", store_uri=ws.store_uri),
            rows.episodes("swept-run", store_uri=ws.store_uri),
        ]
        times = ("started_at", "ended_at")
        return [[{k: v for k, v in r.items() if k not in times} for r in got] for got in found]

    before = run_view()
    assert [r["episode"] for r in before[3]] == list(range(6))
    replayed = ws.run("experiment-replay", "swept-run", "--record")
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert "identical to the record" in replayed.stdout + replayed.stderr
    after = run_view()
    assert [r["episode"] for r in after[3]] == list(range(6))
    for got, expected in zip(after, before, strict=True):
        assert got == expected, first_difference(got, expected)
