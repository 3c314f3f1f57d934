"""Hot reload: a plug-in file edited while a run runs; the run goes on with the new code.

The agent's module is written into the workspace (beside the run file) so that the test can
edit it; the environment (``recording_plugins:WaitingEnvironment``) steps one long episode
until the file ``stop`` exists. The test waits for rows in the store (polled, with a limit) to
see each edit take effect, then ends the run and checks every row.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
import uuid

import pytest

from palaestra.store import query, rows
from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(120)

AGENT = '''\
"""The agent whose code the test edits: everything it does shows VERSION."""

import pickle

from palaestra.agent import Brain, Muscle, Objective

VERSION = {version}


class ConstantMuscle(Muscle):
    """Sets its actuator to VERSION; counts the Brain's updates it applied."""

    def __init__(self):
        self.updates = 0

    def update(self, update):
        self.updates += 1

    def propose_actions(self, sensors, actuators_available):
        actuator = actuators_available[0]
        actuator(VERSION)
        self.add_statistics("updates", self.updates, allow_overwrite=True)  # (once per game)
        return [actuator], VERSION


class VersionObjective(Objective):
    def internal_reward(self, memory, **kwargs):
        return float(VERSION)


class CountingBrain(Brain):
    """Counts its thinking calls; the count survives a reload through store and load."""

    def __init__(self):
        self.count = 0

    def thinking(self, muscle_id, data_from_muscle):
        self.count += 1
        self.add_statistics("count", self.count)
        self.add_statistics("version", VERSION)
        return self.count

    def store(self):
        self.store_brain_dump(pickle.dumps(self.count))

    def load(self):
        {load}
'''

LOAD = """dump = self.load_brain_dump()
        if dump is not None:
            self.count = pickle.load(dump)"""

RUN = """\
uid: {uid}
experiment_uid: reload-tests
seed: 5
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: recording_plugins:WaitingEnvironment
            uid: myenv
            params: {{discrete: true, max_iter: 1000000, until: '{stop}'}}
      agents:
        - name: live
          brain: {{name: reload_agent:CountingBrain, params: {{}}}}
          muscle: {{name: reload_agent:ConstantMuscle, params: {{}}}}
          objective: {{name: reload_agent:VersionObjective, params: {{}}}}
          sensors: [myenv.0]
          actuators: [myenv.0]
          hot_reload: {hot_reload}
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1{games}}}
{phase_1}run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""

PHASE_1 = """\
  - phase_1:
      environments:
        - environment:
            name: recording_plugins:WaitingEnvironment
            uid: myenv
            params: {{discrete: true, max_iter: 1000000, until: '{stop}'}}
"""


class LiveRun:
    """A run of the agent module in ``workspace``, started in the background."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        hot_reload: bool,
        flag: bool,
        phases: int = 1,
        games: int = 1,
        agent: str = AGENT,
        brain: str = "CountingBrain",
    ) -> None:
        self.workspace = workspace
        self.uid = (
            f"reload-{uuid.uuid4().hex[:8]}"  # a pause flag of its own (see RecordingSwitch)
        )
        self.module = workspace.path / "reload_agent.py"
        self.stops = [workspace.path / f"stop-{phase}" for phase in range(phases)]
        self.stop = self.stops[-1]  # the last phase's
        self.mtime = time.time() - 100  # each edit moves the file's mtime on by a second
        self.edit(agent.format(version=1, load=LOAD))
        run = workspace.path / "run.yml"
        run.write_text(
            RUN.replace("reload_agent:CountingBrain", f"reload_agent:{brain}").format(
                uid=self.uid,
                stop=self.stops[0],
                hot_reload="true" if hot_reload else "false",
                phase_1=PHASE_1.format(stop=self.stops[1]) if phases > 1 else "",
                games=f", envs_per_worker: {games}" if games > 1 else "",
            )
        )
        args = ["experiment-start", *(["--reload"] if flag else []), str(run)]
        self.proc = workspace.start(*args)

    def edit(self, text: str) -> None:
        """Write the module and give it a later mtime than any before (whatever the file
        system's timestamp granularity)."""
        self.module.write_text(text)
        self.mtime += 1
        os.utime(self.module, (self.mtime, self.mtime))

    def count(self, sql: str) -> int:
        """Poll the store (bounded) until ``sql`` counts more than 0; that count."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended early:\n{self.proc.communicate()[1][-3000:]}")
            try:
                uri = f"file:{self.workspace.store}?mode=ro"
                with sqlite3.connect(uri, uri=True) as conn:
                    (count,) = conn.execute(sql).fetchone()
            except sqlite3.OperationalError:  # no store or no tables yet
                count = 0
            if count:
                return int(count)
            time.sleep(0.05)
        pytest.fail(f"the store never answered {sql!r} in 60 s")

    def acted(self, value: int, after: int = -1, phase: int = 0) -> int:
        """Wait for stored steps of ``phase`` after step ``after`` on which the Muscle set
        ``value``."""
        return self.count(
            "select count(*) from muscle_actions where "
            f"json_extract(actuator_setpoints, '$.\"myenv.0\"') = {value} and step > {after} "
            "and agent_id in (select a.id from agents a join experiment_run_phases p "
            f'on a.experiment_run_phase_id = p.id where p."index" = {phase})'
        )

    def reloads(self, ok: bool, at_least: int) -> int:
        """Wait until ``at_least`` rows of reloads that took (``ok``) or failed are stored."""
        return self.count(
            f"select case when count(*) >= {at_least} then count(*) else 0 end "
            f"from code_reloads where ok = {int(ok)}"
        )

    def finish(self) -> str:
        """End the run (the environment ends its episode) and return its stderr."""
        self.stop.touch()
        try:
            _, err = self.proc.communicate(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        assert self.proc.returncode == 0, err[-3000:]
        return err

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def setpoints(
    workspace: Workspace, phase: int = 0, worker: int = 0
) -> list[tuple[int, int, float]]:
    """(step, set point, objective) of every stored step of ``phase`` (of game ``worker``),
    in step order."""
    with sqlite3.connect(workspace.store) as conn:
        rows = conn.execute(
            "select ma.step, json_extract(ma.actuator_setpoints, '$.\"myenv.0\"'), ma.objective "
            "from muscle_actions ma join agents a on a.id = ma.agent_id "
            "join experiment_run_phases p on p.id = a.experiment_run_phase_id "
            f'where p."index" = {phase} and ma.worker = {worker} order by ma.step'
        ).fetchall()
    return [(int(s), int(v), float(o)) for s, v, o in rows]


def test_edits_take_effect_between_steps_and_a_broken_edit_keeps_the_old_code(
    workspace: Workspace,
) -> None:
    """``--reload``: version 1 runs, an edit to 2 takes (Muscle, Objective and Brain, the
    Brain's count carried over), a syntax error keeps 2 running and is logged once per
    process, a fix to 3 takes; no step is lost, and every reload is in the store."""
    live = LiveRun(workspace, hot_reload=False, flag=True)
    try:
        live.acted(1)
        live.edit(AGENT.format(version=2, load=LOAD))
        live.reloads(ok=True, at_least=3)
        live.acted(2)
        live.edit(AGENT.format(version="= 3  # a syntax error", load=LOAD))
        live.reloads(ok=False, at_least=3)
        failed_at = live.count("select max(step) + 1 from code_reloads where not ok")
        live.acted(2, after=failed_at)  # steps after the broken edit still run version 2
        live.edit(AGENT.format(version=3, load=LOAD))
        live.reloads(ok=True, at_least=6)
        live.acted(3)
        err = live.finish()
    finally:
        live.close()

    # Each process logged the failed reload's traceback once, not once per step.
    assert err.count("hot reload of") == 2, err[-3000:]
    assert err.count("SyntaxError") == 2, err[-3000:]
    assert "Muscle-live-0" in err and "Brain-live" in err

    reloads = query.code_reloads(live.uid, store_uri=workspace.store_uri)
    for source in ("brain:live", "muscle:live", "objective:live"):
        assert list(reloads.ok[reloads.source == source]) == [True, False, True], source
    assert set(reloads.module) == {"reload_agent"}
    assert set(reloads.path) == {str(live.module)}
    assert reloads.error[reloads.ok].isna().all()
    assert all("SyntaxError" in error for error in reloads.error[~reloads.ok])

    # No step lost: one row per step, 0, 1, 2, ...; the set point goes 1 -> 2 -> 3 at the
    # steps the Muscle's reloads name, the objective one step earlier (the new Objective
    # computes the reward of the last step the old Muscle acted on).
    rows = setpoints(workspace)
    assert [step for step, _, _ in rows] == list(range(len(rows)))
    muscle = reloads[(reloads.source == "muscle:live") & reloads.ok]
    first_2, first_3 = (int(step) for step in muscle.step)
    assert [v for _, v, _ in rows] == [
        1 if s < first_2 else 2 if s < first_3 else 3 for s, _, _ in rows
    ]
    assert [o for _, _, o in rows] == [
        1.0 if s < first_2 - 1 else 2.0 if s < first_3 - 1 else 3.0 for s, _, _ in rows
    ]
    failed = reloads[(reloads.source == "muscle:live") & ~reloads.ok]
    assert first_2 < int(failed.step.iloc[0]) < first_3

    # The new Muscle got the Brain's newest update at once (then the step's own): 2 updates
    # applied on its first step.
    stats = query.statistics(live.uid, source="muscle", store_uri=workspace.store_uri)
    updates = {int(s): v["updates"] for s, v in zip(stats.step, stats.statistics, strict=True)}
    assert updates[first_2] == 2 and updates[first_3] == 2
    assert updates[first_2 - 1] == first_2  # the old one had applied one per step

    # The Brain's count went on across its reloads (its state through store and load) while
    # its version changed where its reloads say.
    brain = query.statistics(live.uid, source="brain", store_uri=workspace.store_uri)
    counted = [
        (int(s), v["count"], v["version"])
        for s, v in zip(brain.step, brain.statistics, strict=True)
    ]
    assert [c for _, c, _ in counted] == list(range(1, len(counted) + 1))
    brain_reloads = reloads[(reloads.source == "brain:live") & reloads.ok]
    b2, b3 = (int(step) for step in brain_reloads.step)
    assert [v for _, _, v in counted] == [
        1 if s < b2 else 2 if s < b3 else 3 for s, _, _ in counted
    ]

    shown = workspace.run("experiment-show", live.uid)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if "reload_agent.py" in line]
    assert len(lines) == 9, shown.stdout
    assert sum("FAILED, old code kept: SyntaxError" in line for line in lines) == 3
    shown = workspace.run("experiment-show", live.uid, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)["code_reloads"]
    assert [r["ok"] for r in listed].count(False) == 3 and len(listed) == 9


def test_with_several_games_per_worker_the_muscle_reloads_between_rounds(
    workspace: Workspace,
) -> None:
    """``envs_per_worker: 2``: the Muscle plays both games in rounds; an edit takes before a
    round, in both games at the step its reload names, and no step is lost."""
    live = LiveRun(workspace, hot_reload=True, flag=False, games=2)
    try:
        live.acted(1)
        live.edit(AGENT.format(version=2, load=LOAD))
        live.reloads(ok=True, at_least=3)
        live.acted(2)
        live.finish()
    finally:
        live.close()

    reloads = query.code_reloads(live.uid, store_uri=workspace.store_uri)
    assert sorted(reloads.source) == ["brain:live", "muscle:live", "objective:live"]
    assert reloads.ok.all()
    muscle = reloads[reloads.source == "muscle:live"]
    reloaded_at = int(muscle.step.iloc[0])
    assert int(muscle.worker.iloc[0]) in (0, 1) and reloaded_at > 0
    for game in (0, 1):  # the two games step together: both switch at that step
        rows = setpoints(workspace, worker=game)
        assert [step for step, _, _ in rows] == list(range(len(rows))), game
        assert [v for _, v, _ in rows] == [1 if s < reloaded_at else 2 for s, _, _ in rows]


BATCHING = (
    AGENT
    + """

class BatchingBrain(CountingBrain):
    \"\"\"Thinks about a round's experiences in one call, which records VERSION.\"\"\"

    def thinking_batch(self, experiences):
        self.count += len(experiences)
        self.add_statistics("batched", VERSION)
        return [self.count for _ in experiences]
"""
)


def test_a_brain_with_thinking_batch_is_reloaded_and_keeps_batching(
    workspace: Workspace,
) -> None:
    """Hot reload no longer turns ``thinking_batch`` off: the Brain's file is looked at before
    each batch (``envs_per_worker: 2``: a round's experiences in one call)."""
    batched = "select count(*) from statistics where json_extract(statistics, '$.batched') = %d"
    live = LiveRun(
        workspace, hot_reload=True, flag=False, games=2, agent=BATCHING, brain="BatchingBrain"
    )
    try:
        live.count(batched % 1)
        live.edit(BATCHING.format(version=2, load=LOAD))
        live.reloads(ok=True, at_least=3)
        live.count(batched % 2)
        live.finish()
    finally:
        live.close()


@pytest.mark.slow
def test_a_failing_state_handover_keeps_the_old_brain(workspace: Workspace) -> None:
    """``hot_reload: true`` in the run file: a Brain whose new ``load`` raises keeps the old
    Brain (its count goes on, its version stays), while the Muscle process, which loaded the
    same file, runs the new code."""
    live = LiveRun(workspace, hot_reload=True, flag=False)
    try:
        live.acted(1)
        live.edit(AGENT.format(version=2, load='raise RuntimeError("cannot read the dump")'))
        live.reloads(ok=False, at_least=1)
        live.reloads(ok=True, at_least=2)
        live.acted(2)
        err = live.finish()
    finally:
        live.close()

    assert err.count("hot reload of") == 1 and "cannot read the dump" in err, err[-3000:]
    reloads = query.code_reloads(live.uid, store_uri=workspace.store_uri)
    outcome = dict(zip(reloads.source, reloads.ok, strict=True))
    assert outcome == {"brain:live": False, "muscle:live": True, "objective:live": True}
    (error,) = reloads.error[reloads.source == "brain:live"]
    assert "CountingBrain.load" in error and "cannot read the dump" in error

    brain = query.statistics(live.uid, source="brain", store_uri=workspace.store_uri)
    assert {v["version"] for v in brain.statistics} == {1}
    counts = [v["count"] for v in brain.statistics]
    assert counts == list(range(1, len(counts) + 1))
    assert {v for _, v, _ in setpoints(workspace)} == {1, 2}

    exported = workspace.run(
        "results", live.uid, "--table", "code_reloads", "--format", "json",
        "--source", "brain:live",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    (row,) = json.loads(exported.stdout)
    assert (row["ok"], row["module"], row["phase"]) == (False, "reload_agent", 0)
    assert "cannot read the dump" in row["error"]
    cleaned = workspace.run("clean", live.uid, "--yes")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "3 code reloads" in cleaned.stdout, cleaned.stdout


@pytest.mark.slow
def test_without_hot_reload_nothing_is_watched(workspace: Workspace) -> None:
    """An edit during a run without hot reload changes nothing, and nothing is recorded."""
    live = LiveRun(workspace, hot_reload=False, flag=False)
    try:
        live.acted(1)
        live.edit(AGENT.format(version=2, load=LOAD))
        steps = live.count("select max(step) from muscle_actions")
        live.acted(1, after=steps + 600)  # well past any check interval
        err = live.finish()
    finally:
        live.close()
    assert "hot reload" not in err
    assert {v for _, v, _ in setpoints(workspace)} == {1}
    assert len(query.code_reloads(live.uid, store_uri=workspace.store_uri)) == 0


@pytest.mark.slow
def test_a_later_phase_starts_with_the_reloaded_code(workspace: Workspace) -> None:
    """The processes of phase 1 are forked from the executor, which imported version 1 when
    the run began: they load the file again, so version 2, reloaded in phase 0, runs from
    phase 1's first step."""
    live = LiveRun(workspace, hot_reload=True, flag=False, phases=2)
    try:
        live.acted(1)
        live.edit(AGENT.format(version=2, load=LOAD))
        live.reloads(ok=True, at_least=3)
        live.stops[0].touch()  # phase 0 ends
        live.acted(2, phase=1)
        err = live.finish()
    finally:
        live.close()
    assert "hot reload" not in err, err[-3000:]
    assert {v for _, v, _ in setpoints(workspace, phase=1)} == {2}
    assert {o for _, _, o in setpoints(workspace, phase=1)} == {2.0}
    reloads = query.code_reloads(live.uid, store_uri=workspace.store_uri)
    assert set(reloads.phase) == {0} and reloads.ok.all()
    brain = query.statistics(live.uid, phase=1, source="brain", store_uri=workspace.store_uri)
    assert {v["version"] for v in brain.statistics} == {2}


@pytest.mark.slow
def test_a_run_resumed_with_reload_takes_edits(workspace: Workspace) -> None:
    """The store keeps no ``--reload`` of a run's start: ``experiment-resume --reload`` says
    it again (it had no such option, and an edit during the resumed run was not taken)."""
    live = LiveRun(workspace, hot_reload=False, flag=True)
    try:
        live.acted(1)
        os.killpg(live.proc.pid, signal.SIGINT)  # (Ctrl-C: its session, started by the test)
        _, err = live.proc.communicate(timeout=60)
        assert live.proc.returncode == 130, err[-3000:]
        live.proc = workspace.start("experiment-resume", "--reload", live.uid)
        steps = live.count("select max(id) from muscle_actions")
        live.count(f"select count(*) from muscle_actions where id > {steps}")  # (resumed)
        live.edit(AGENT.format(version=2, load=LOAD))
        live.acted(2)
        live.finish()
    finally:
        live.close()
    reloads = query.code_reloads(live.uid, store_uri=workspace.store_uri)
    assert len(reloads) and reloads.ok.all()


def test_reload_of_builtin_plugins_watches_nothing_and_says_so(workspace: Workspace) -> None:
    """``--reload`` on the example run, whose agents are palaestra's own: the run is as
    without it, and each agent's Brain says once per phase that nothing is watched."""
    # a uid of its own: a run of the same uid elsewhere on the host shares its pause flag
    run = workspace.variant("dummy_run.yml", ("uid: dummy-run", "uid: reload-dummy-run"))
    result = workspace.run("experiment-start", "--reload", str(run))
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [line for line in result.stderr.splitlines() if "watches nothing" in line]
    assert len(warnings) == 4, result.stderr[-3000:]  # 2 agents x 2 phases
    assert all("Brain-" in line and "WARNING" in line for line in warnings)


SELF_EDITING = '''\
"""A Brain that edits its own file in the last steps of its first training episode (version
1 only), each time letting the hot reload's interval pass, so that its process sees the
change once before the evaluation rollout and again at the evaluation."""

import os
import time

from palaestra.agent import DummyBrain
from palaestra.core.code_watch import CHECK_INTERVAL

VERSION = {version}


class SelfEditingBrain(DummyBrain):
    calls = 0

    def thinking(self, muscle_id, data_from_muscle):
        self.calls += 1
        if VERSION == 1 and self.calls == 4:  # step 3 of episode 0 (of 4 steps, 0 to 4)
            with open(__file__) as f:
                text = f.read()
            with open(__file__, "w") as f:
                f.write(text.replace("VERSION = 1", "VERSION = 2  # edited"))
            os.utime(__file__, (time.time() + 10, time.time() + 10))
        if VERSION == 1 and self.calls in (4, 5):  # the next look is due
            time.sleep(2 * CHECK_INTERVAL)
        return super().thinking(muscle_id, data_from_muscle)
'''

EVALUATED = """\
uid: {uid}
experiment_uid: reload-tests
seed: 5
version: "0.1"
schedule:
  - phase_0:
      environments:
        - environment:
            name: palaestra.environment.dummy_environment:DummyEnvironment
            uid: myenv
            params: {{discrete: true, max_iter: 4}}
      agents:
        - name: live
          brain: {{name: self_editing:SelfEditingBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [myenv.0]
          actuators: [myenv.0]
          hot_reload: true
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: 1, episodes: 1, evaluate_every: 1}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


@pytest.mark.slow  # (its unit test: tests/unit/test_hot_reload.py)
def test_a_brain_reloaded_at_an_evaluation_names_where_its_rollout_ended(
    workspace: Workspace,
) -> None:
    """The Brain hears nothing of an evaluation rollout: a change it saw settle only at the
    evaluation after it (its ``evaluate_rollouts`` the first thing the new code did) was
    recorded at worker, episode and step -1. Its row names the rollout's worker, episode (1,
    after training episode 0) and last step (4, as the Brain's statistics number an
    episode's steps)."""
    uid = f"reload-{uuid.uuid4().hex[:8]}"
    (workspace.path / "self_editing.py").write_text(SELF_EDITING.format(version=1))
    run = workspace.path / "run.yml"
    run.write_text(EVALUATED.format(uid=uid))
    result = workspace.run("experiment-start", str(run))
    assert result.returncode == 0, result.stderr[-3000:]

    reloads = query.code_reloads(uid, store_uri=workspace.store_uri)
    ((source, ok, worker, episode, step),) = zip(
        reloads.source, reloads.ok, reloads.worker, reloads.episode, reloads.step, strict=True
    )
    assert (source, ok) == ("brain:live", True)
    assert (worker, episode, step) == (0, 1, 4)
    episodes = rows.episodes(uid, store_uri=workspace.store_uri)
    assert [(r["worker"], r["episode"], r["steps"]) for r in episodes] == [(0, 0, 4), (0, 1, 4)]
