"""Plug-ins' own records (``context.record``) and pausing the recording of a run: by a
plug-in at a known step, and by ``experiment-record`` from outside."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from palaestra import replay
from palaestra.store import query
from tests.conftest import PLUGINS, Workspace

pytestmark = pytest.mark.timeout(120)

RUN = """\
uid: recording-run
experiment_uid: recording-tests
seed: 3
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: {environment}
            uid: myenv
            params: {{discrete: true, max_iter: {steps}{environment_params}}}
      agents:
        - name: rec
          brain: {{name: recording_plugins:RecordingBrain, params: {{}}}}
          muscle: {{name: recording_plugins:RecordingMuscle, params: {{{muscle_params}}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [myenv.0]
          actuators: [myenv.0]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: {episodes}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


def run_file(
    workspace: Workspace,
    *,
    environment: str = "recording_plugins:RecordingEnvironment",
    environment_params: str = "",
    muscle_params: str = "",
    steps: int = 5,
    episodes: int = 2,
) -> Path:
    path = workspace.path / "run.yml"
    path.write_text(
        RUN.format(
            environment=environment,
            environment_params=environment_params,
            muscle_params=muscle_params,
            steps=steps,
            episodes=episodes,
        )
    )
    return path


def pairs(workspace: Workspace, sql: str) -> list[tuple[int, int]]:
    with sqlite3.connect(workspace.store) as conn:
        return [(row[0], row[1]) for row in conn.execute(sql)]


def test_plugins_record_values_at_their_steps(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Muscle, Brain and Environment record through their contexts; the rows carry the step
    each was recorded at, and come back through the query API, ``results`` and replays."""
    result = workspace.run("experiment-start", str(run_file(workspace)))
    assert result.returncode == 0, result.stderr[-2000:]

    found = query.plugin_records("recording-run", store_uri=workspace.store_uri)
    muscle = found[found.source == "muscle:rec"]
    calls = muscle[muscle.key == "calls"]
    # 5 steps per episode; a Muscle acts on steps 0..4 of each episode (its 5th ends it)
    assert list(zip(calls.episode, calls.step, calls.value, strict=True)) == [
        (e, s, 5 * e + s + 1) for e in range(2) for s in range(5)
    ]
    arrays = muscle[muscle.key == "array"]
    assert list(arrays.value)[:2] == [[0, 1], [0, 2]]
    env = found[found.source == "env:myenv"]
    assert list(zip(env.episode, env.step, env.value, strict=True)) == [
        (e, s, s) for e in range(2) for s in range(1, 6)
    ]
    brain = found[found.source == "brain:rec"]
    assert len(brain) > 0 and set(brain.key) == {"thought"}
    assert all(isinstance(v, dict) and "value" in v for v in brain.value)

    exported = workspace.run(
        "results", "recording-run", "--table", "plugin_records", "--format", "json",
        "--source", "env:myenv", "--episode", "1",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    rows = json.loads(exported.stdout)
    assert [(r["step"], r["key"], r["value"]) for r in rows] == [
        (s, "iter", s) for s in range(1, 6)
    ]

    monkeypatch.syspath_prepend(str(PLUGINS))  # replay.open loads the environment here
    with replay.open("recording-run", episode=1, store_uri=workspace.store_uri) as steps:
        seen = [
            (step.step, sorted((r["source"], r["key"], str(r["value"])) for r in step.records))
            for step in steps
        ]
    assert seen[0][0] == 1
    for number, records in seen:  # the world's step N follows the Muscle's step N - 1
        assert ("env:myenv", "iter", str(number)) in records
        assert ("muscle:rec", "calls", str(5 + number)) in records


def test_a_value_with_no_json_form_fails_naming_the_method_and_key(
    workspace: Workspace,
) -> None:
    path = run_file(workspace, muscle_params="bad_at: 3")
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    for part in ("propose_actions", "'opaque'", "no JSON form"):
        assert part in reason, (part, reason)


@pytest.mark.parametrize(
    ("plugin", "process", "method", "advice"),
    [
        (
            "recording_plugins:TeardownRecordingMuscle",
            "Muscle-rec-0",
            "teardown",
            "record it at a step (propose_actions(), update())",
        ),
        (
            "recording_plugins:TeardownRecordingBrain",
            "Brain-rec",
            "teardown",
            "record it at a step, or in store(), which the end of the phase calls before "
            "teardown()",
        ),
        (
            "recording_plugins:ShutdownRecordingEnvironment",
            "Environment-myenv-0",
            "shutdown",
            "record it at a step (start_environment(), update())",
        ),
    ],
)
def test_a_record_after_the_phases_last_step_fails_naming_the_method_and_key(
    workspace: Workspace, plugin: str, process: str, method: str, advice: str
) -> None:
    """A record in a Brain's or Muscle's ``teardown()`` or an environment's ``shutdown()``
    comes after the process sent its last rows. It was dropped without a word: the run
    finished (exit 0) and ``plugin_records`` had none of it."""
    text = run_file(workspace).read_text()
    kind = plugin.rpartition(":")[2]
    default = {
        "TeardownRecordingMuscle": "recording_plugins:RecordingMuscle",
        "TeardownRecordingBrain": "recording_plugins:RecordingBrain",
        "ShutdownRecordingEnvironment": "recording_plugins:RecordingEnvironment",
    }[kind]
    path = workspace.path / "run.yml"
    path.write_text(text.replace(default, plugin))
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    said = (
        f"{process}: {method}() called context.record('last_words') after the last step of "
        "the phase: a record is stored with the step it is made at, and the phase's rows were "
        f"sent; {advice}"
    )
    assert said in reason, reason
    assert said in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(
    ("plugin", "default", "said"),
    [
        (
            "recording_plugins:TeardownStatisticsBrain",
            "recording_plugins:RecordingBrain",
            "Brain-rec (recording_plugins:TeardownStatisticsBrain.teardown): StatisticsError: "
            "add_statistics('last_loss') after the last step of the phase: a statistic is "
            "stored with the step it is added at, and the phase's rows were sent; add it at a "
            "step, or in store(), which the end of the phase calls before teardown()",
        ),
        (
            "recording_plugins:TeardownStatisticsMuscle",
            "recording_plugins:RecordingMuscle",
            "Muscle-rec-0 (recording_plugins:TeardownStatisticsMuscle.teardown): "
            "StatisticsError: add_statistics('last_q') after the last step of the phase",
        ),
    ],
)
def test_a_statistic_after_the_phases_last_step_fails_naming_the_method_and_key(
    workspace: Workspace, plugin: str, default: str, said: str
) -> None:
    """``add_statistics`` in a Brain's or Muscle's ``teardown()`` comes after the process sent
    its last rows: it was dropped without a word (exit 0, no ``statistics`` row)."""
    path = workspace.path / "run.yml"
    path.write_text(run_file(workspace).read_text().replace(default, plugin))
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 1, result.stderr[-2000:]
    status, reason = workspace.instance_status()
    assert status == "error"
    assert said in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_a_plugin_pauses_and_resumes_recording_at_known_steps(workspace: Workspace) -> None:
    """The Muscle pauses on its 8th call (episode 1, its step 2; the world's step 3) and
    resumes on its 13th (episode 2, its step 2; the world's step 3): exactly those steps have
    no rows, the gap says so, and a replay refuses to cross it but replays episode 0."""
    path = run_file(workspace, muscle_params="pause_at: 8, resume_at: 13", episodes=3)
    result = workspace.run("experiment-start", str(path))
    assert result.returncode == 0, result.stderr[-2000:]

    world = pairs(workspace, "select episode, step from world_states order by id")
    assert world == [(0, s) for s in range(1, 6)] + [(1, 1), (1, 2), (2, 3), (2, 4), (2, 5)]
    actions = pairs(workspace, "select episode, step from muscle_actions order by id")
    assert actions == [(0, s) for s in range(5)] + [(1, 0), (1, 1), (2, 2), (2, 3), (2, 4)]
    gaps = query.recording_gaps("recording-run", store_uri=workspace.store_uri)
    assert list(gaps.worker) == [0]
    assert (gaps.from_episode[0], gaps.from_step[0]) == (1, 3)
    assert (gaps.to_episode[0], gaps.to_step[0]) == (2, 3)
    # the plug-in's own records are kept while paused
    records = query.plugin_records("recording-run", store_uri=workspace.store_uri, key="calls")
    assert list(records.value) == list(range(1, 16))
    exported = workspace.run(
        "results", "recording-run", "--table", "recording_gaps", "--format", "json"
    )
    assert exported.returncode == 0, exported.stderr
    (row,) = json.loads(exported.stdout)
    assert (row["from_episode"], row["from_step"], row["to_episode"], row["to_step"]) == (
        1, 3, 2, 3,
    )  # fmt: skip

    refused = workspace.run("experiment-replay", "recording-run")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "recording was paused from episode 1 step 3 to episode 2 step 3" in refused.stderr
    assert "Traceback" not in refused.stderr
    before = workspace.run("experiment-replay", "recording-run", "--episode", "0")
    assert before.returncode == 0, before.stdout + before.stderr

    cleaned = workspace.run("clean", "recording-run", "--yes")
    assert cleaned.returncode == 0, cleaned.stderr
    assert " plug-in records, 1 recording gap" in cleaned.stdout, cleaned.stdout


def wait_for(workspace: Workspace, proc: subprocess.Popen[str], sql: str) -> int:
    """Poll the store (bounded) until ``sql`` counts more than 0; that count."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended early: {proc.communicate()[1][-3000:]}"
        try:
            with sqlite3.connect(f"file:{workspace.store}?mode=ro", uri=True) as conn:
                (count,) = conn.execute(sql).fetchone()
        except sqlite3.OperationalError:  # no store or no tables yet
            count = 0
        if count:
            return int(count)
        time.sleep(0.05)
    pytest.fail(f"the store never answered {sql!r} in 60 s")


@pytest.mark.slow
def test_experiment_record_pauses_and_resumes_a_running_run(workspace: Workspace) -> None:
    stop = workspace.path / "stop"
    path = run_file(
        workspace,
        environment="recording_plugins:WaitingEnvironment",
        environment_params=f", step_delay: 0.0002, until: '{stop}'",
        steps=1_000_000,
        episodes=1,
    )
    proc = workspace.start("experiment-start", str(path))
    try:
        wait_for(
            workspace,
            proc,
            "select count(*) from world_states join experiment_run_instances i "
            "on i.status = 'running'",
        )
        paused = workspace.run("experiment-record", "pause", "recording-run")
        assert paused.returncode == 0, paused.stderr
        assert "paused" in paused.stdout
        wait_for(workspace, proc, "select count(*) from recording_gaps")
        resumed = workspace.run("experiment-record", "resume", "recording-run")
        assert resumed.returncode == 0, resumed.stderr
        wait_for(workspace, proc, "select count(*) from recording_gaps where to_step is not null")
        stop.touch()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]

    gaps = query.recording_gaps("recording-run", store_uri=workspace.store_uri)
    assert len(gaps) == 1 and gaps.to_step[0] > gaps.from_step[0]
    steps = [s for _, s in pairs(workspace, "select episode, step from world_states order by id")]
    gap = set(range(int(gaps.from_step[0]), int(gaps.to_step[0])))
    assert steps == [s for s in range(1, steps[-1] + 1) if s not in gap]

    ended = workspace.run("experiment-record", "pause", "recording-run")
    assert ended.returncode == 2
    assert "is not running" in ended.stderr and "Traceback" not in ended.stderr
    unknown = workspace.run("experiment-record", "resume", "no-such-run")
    assert unknown.returncode == 2, unknown.stderr
    assert "no-such-run" in unknown.stderr and "Traceback" not in unknown.stderr
