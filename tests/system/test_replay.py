"""``experiment-replay`` and :mod:`palaestra.replay` on runs recorded by the real CLI: a replay
reproduces its record; ``--record`` writes a copy equal to its source row for row (Vanilla and
TakingTurns, one and two workers, one and two environments, discrete and continuous spaces);
a divergence, a non-deterministic environment and bad input are reported with their exit codes;
a user substitutes set points from Python; a record written at the store's first revision
(0001) migrates and replays."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from palaestra import replay
from palaestra.store import rows, schema
from palaestra.store.engine import make_engine
from tests.conftest import PLUGINS, cli_runner
from tests.unit.test_migrations import OLD, upgrade

pytestmark = pytest.mark.timeout(180)

DUMMY = "palaestra.environment.dummy_environment:DummyEnvironment"
UNREPLAYABLE = "replay_plugins:UnreplayableEnvironment"


@dataclass(frozen=True)
class Combo:
    uid: str
    simulation: str
    workers: int
    environments: int
    discrete: bool
    environment: str = DUMMY


COMBOS = [
    Combo("vanilla-1w-1e-discrete", "Vanilla", 1, 1, True),
    Combo("turns-2w-2e-continuous", "TakingTurns", 2, 2, False),
    Combo("vanilla-2w-2e-continuous", "Vanilla", 2, 2, False),
    Combo("turns-1w-1e-discrete", "TakingTurns", 1, 1, True),
]
UNDETERMINED = Combo("unreplayable", "Vanilla", 1, 1, True, UNREPLAYABLE)


def run_file(combo: Combo) -> str:
    """Two agents over ``combo.environments`` environments of 6 steps, 2 episodes."""
    envs = ["e1", "e2"][: combo.environments]
    last = envs[-1]
    environments = "".join(
        f"""
        - environment:
            name: {combo.environment}
            uid: {uid}
            params: {{discrete: {str(combo.discrete).lower()}, max_iter: {5 + i}}}"""
        for i, uid in enumerate(envs)
    )

    def agent(name: str, sensors: list[str], actuators: list[str]) -> str:
        return f"""
        - name: {name}
          brain: {{name: palaestra.agent.dummy_brain:DummyBrain, params: {{}}}}
          muscle: {{name: palaestra.agent.dummy_muscle:DummyMuscle, params: {{}}}}
          objective: {{name: palaestra.agent.dummy_objective:DummyObjective, params: {{}}}}
          sensors: [{", ".join(sensors)}]
          actuators: [{", ".join(actuators)}]"""

    agents = agent("a", ["e1.0", f"{last}.1"], ["e1.0"]) + agent(
        "b", [f"{last}.2"], [f"{last}.2", "e1.3"]
    )
    return f"""\
uid: {combo.uid}
experiment_uid: replay-tests
seed: 11
version: "0.1"
schedule:
  - phase_0:
      environments:{environments}
      agents:{agents}
      simulation:
        name: palaestra.simulation:{combo.simulation}
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {combo.workers}, episodes: 2}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""


@dataclass
class Store:
    path: Path

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.path / 'palaestra.db'}"

    def palaestra(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), env.get("PYTHONPATH")]))
        env["PALAESTRA_STORE_URI"] = self.uri
        return subprocess.run(
            [sys.executable, "-m", "palaestra", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def replay(self, *args: str) -> Replayed:
        """``palaestra experiment-replay ARGS`` in this process (a subprocess costs seconds)."""
        from palaestra.cli.main import cli

        result = cli_runner({"PALAESTRA_STORE_URI": self.uri}).invoke(
            cli, ["experiment-replay", *args]
        )
        return Replayed(result.exit_code, result.stdout, result.stderr)


@dataclass
class Replayed:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One store with a run of every combination (one ``experiment-start`` for them all)."""
    store = Store(tmp_path_factory.mktemp("replay"))
    files = []
    for combo in [*COMBOS, UNDETERMINED]:
        path = store.path / f"{combo.uid}.yml"
        path.write_text(run_file(combo))
        files.append(str(path))
    started = store.palaestra("experiment-start", *files, timeout=170)
    assert started.returncode == 0, started.stderr
    sys.path.insert(0, str(PLUGINS))  # replay.open loads UnreplayableEnvironment here
    yield store
    sys.path.remove(str(PLUGINS))


def instances(store: Store, run: str) -> list[str]:
    return [row["instance_uid"] for row in rows.runs(run=run, store_uri=store.uri)]


def table(store: Store, name: str, run: str, instance: str) -> list[dict[str, Any]]:
    return list(getattr(rows, name)(run, store_uri=store.uri, instance=instance))


@pytest.mark.parametrize("combo", COMBOS, ids=[c.uid for c in COMBOS])
def test_replay_while_recording_copies_the_source_row_for_row(store: Store, combo: Combo) -> None:
    source = instances(store, combo.uid)[0]

    done = store.replay(combo.uid, "--instance", source, "--record")

    assert done.returncode == 0, done.stderr
    assert "identical to the record" in done.stdout
    copy = instances(store, combo.uid)[-1]
    assert copy != source and f"instance {copy}" in done.stdout
    for name in ("world_states", "muscle_actions"):
        original = table(store, name, combo.uid, source)
        copied = table(store, name, combo.uid, copy)
        assert original, name
        assert copied == original, name

    def episodes(instance: str) -> list[dict[str, Any]]:
        found = table(store, "episodes", combo.uid, instance)
        for row in found:
            del row["started_at"], row["ended_at"]
        return sorted(found, key=lambda row: (row["phase"], row["worker"], row["episode"]))

    assert episodes(source) and episodes(copy) == episodes(source)
    with sqlite3.connect(store.path / "palaestra.db") as db:
        linked = db.execute(
            "SELECT c.source_instance_id = s.id FROM experiment_run_instances c, "
            "experiment_run_instances s WHERE c.uid = ? AND s.uid = ?",
            (copy, source),
        ).fetchone()
    assert linked == (1,)


def test_a_changed_record_is_reported_at_its_first_divergence(store: Store) -> None:
    run = "vanilla-1w-1e-discrete"
    source = instances(store, run)[0]
    with sqlite3.connect(store.path / "palaestra.db") as db:
        db.execute(
            "UPDATE world_states SET sensors = json_set(sensors, '$.\"e1.4\"', 99) "
            "WHERE episode = 1 AND step = 3 AND environment_id = (SELECT e.id FROM "
            "environments e JOIN experiment_run_phases p ON e.experiment_run_phase_id = p.id "
            "JOIN experiment_run_instances i ON p.experiment_run_instance_id = i.id "
            "WHERE i.uid = ?)",
            (source,),
        )
    try:
        diverged = store.replay(run, "--instance", source)
        until = store.replay(run, "--instance", source, "--episode", "1", "--until", "2")
    finally:
        with sqlite3.connect(store.path / "palaestra.db") as db:
            db.execute(
                "UPDATE world_states SET sensors = json_set(sensors, '$.\"e1.4\"', 3) "
                "WHERE episode = 1 AND step = 3 AND json_extract(sensors, '$.\"e1.4\"') = 99"
            )

    assert diverged.returncode == 1, diverged.stderr
    assert "episode 1, step 3: sensor 'e1.4' was 99 in the record, 3 in the replay" in (
        diverged.stderr
    )
    assert until.returncode == 0, until.stderr
    assert "1 episodes, 2 steps replayed: identical to the record" in until.stdout


def test_an_instance_is_named_by_the_start_of_its_uid_as_list_shows_it(store: Store) -> None:
    """``experiment-list`` on a terminal shows 8 characters of an instance's uid; resume and
    show took them, replay said the run had no such instance."""
    run = "vanilla-1w-1e-discrete"
    source = instances(store, run)[0]

    replayed = store.replay(run, "--instance", source[:8], "--episode", "0")

    assert replayed.returncode == 0, replayed.stderr
    assert f"instance {source}" in replayed.stdout and "identical to the record" in replayed.stdout


def test_an_environment_that_is_not_deterministic_is_named_with_exit_4(store: Store) -> None:
    refused = store.replay(UNDETERMINED.uid)
    replayed = store.replay(UNDETERMINED.uid, "--no-compare")

    assert refused.returncode == replay.EXIT_NOT_DETERMINISTIC == 4
    assert "e1 (replay_plugins:UnreplayableEnvironment) declares replay_deterministic" in (
        refused.stderr
    )
    assert "--no-compare" in refused.stderr
    assert replayed.returncode == 0, replayed.stderr
    assert "not compared" in replayed.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["no-such-run"], "no run 'no-such-run'"),
        (["turns-1w-1e-discrete", "--phase", "7"], "has no phase '7'"),
        (["turns-1w-1e-discrete", "--phase", "phase_1"], "has no phase 'phase_1'"),
        (["turns-1w-1e-discrete", "--episode", "5"], "no recorded episode 5"),
        (["turns-1w-1e-discrete", "--worker", "1"], "has no worker 1"),
        (["turns-1w-1e-discrete", "--instance", "x"], "has no instance 'x'"),
    ],
)
def test_bad_input_exits_2_naming_it(store: Store, args: list[str], named: str) -> None:
    refused = store.replay(*args)

    assert refused.returncode == 2, refused.stderr
    assert named in refused.stderr


def test_a_phase_that_recorded_only_some_steps_is_refused(store: Store) -> None:
    run = "vanilla-2w-2e-continuous"
    source = instances(store, run)[0]
    config = (
        "UPDATE experiment_run_phases SET config = json_set(config, '$.record_every', {}) "
        "WHERE experiment_run_instance_id = "
        "(SELECT id FROM experiment_run_instances WHERE uid = ?)"
    )
    with sqlite3.connect(store.path / "palaestra.db") as db:
        db.execute(config.format(3), (source,))
    try:
        refused = store.replay(run, "--instance", source)
    finally:
        with sqlite3.connect(store.path / "palaestra.db") as db:
            db.execute(config.format(1), (source,))

    assert refused.returncode == 2, refused.stderr
    assert "phase 0 (phase_0) recorded one step in 3" in refused.stderr
    assert "cannot be replayed" in refused.stderr


def test_open_steps_through_an_episode_and_lets_the_user_take_over(store: Store) -> None:
    run = "turns-2w-2e-continuous"
    source = instances(store, run)[0]
    recorded = [
        row
        for row in rows.world_states(run, store_uri=store.uri, instance=source, worker=1)
        if row["episode"] == 1 and row["environment"] == "e2"
    ]

    with replay.open(run, episode=1, worker=1, instance=source, store_uri=store.uri) as steps:
        first = next(steps)
        env = first.environments["e2"]
        assert env.iter == 1  # the live DummyEnvironment, one step into its episode
        second = next(steps)
        second.substitute({"e2.2": 7.5})
        rest = list(steps)

    assert [first.step, second.step] == [1, 2]
    for step in (first, second):
        assert step.divergence is None and not step.diverged_by_user
        assert step.live["e2"].sensors == recorded[step.step - 1]["sensors"]
        assert step.recorded["e2"] == {k: recorded[step.step - 1][k] for k in step.recorded["e2"]}
    assert rest and all(s.diverged_by_user and s.divergence is None for s in rest)
    assert all(s.setpoints == {"e2.2": 7.5} for s in rest)
    assert all(s.live["e2"].setpoints == {"e2.2": 7.5} for s in rest)
    assert rest[-1].live["e1"].done or rest[-1].live["e2"].done


# --- versioned records -----------------------------------------------------------------------

TABLES = [  # in the order their foreign keys need
    "experiments",
    "experiment_runs",
    "experiment_run_instances",
    "experiment_run_phases",
    "environments",
    "agents",
    "world_states",
    "muscle_actions",
]


def store_at_0001(path: Path, source: Path) -> str:
    """A store created at revision 0001 holding ``source``'s rows (the columns 0001 has)."""
    uri = f"sqlite:///{path}"
    engine = make_engine(uri)
    try:
        upgrade(engine, OLD)
        assert schema.current_revision(engine) == OLD
    finally:
        engine.dispose()
    with sqlite3.connect(path) as old, sqlite3.connect(source) as new:
        for table in TABLES:
            columns = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
            names = ", ".join(f'"{c}"' for c in columns)
            found = new.execute(f"SELECT {names} FROM {table}").fetchall()
            marks = ", ".join("?" for _ in columns)
            old.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", found)
    return uri


def test_a_record_of_revision_0001_migrates_and_replays(store: Store, tmp_path: Path) -> None:
    runs = ["vanilla-2w-2e-continuous", "turns-1w-1e-discrete"]
    sources = {run: instances(store, run)[0] for run in runs}
    old = Store(tmp_path)
    old_uri = store_at_0001(tmp_path / "palaestra.db", store.path / "palaestra.db")
    assert old.uri == old_uri

    refused = old.replay(runs[0], "--instance", sources[runs[0]])
    from palaestra.cli.main import cli

    migrated = cli_runner({"PALAESTRA_STORE_URI": old.uri}).invoke(cli, ["database-migrate"])
    replayed = [old.replay(run, "--instance", sources[run]) for run in runs]

    assert refused.returncode == 3 and "database-migrate" in refused.stderr
    assert migrated.exit_code == 0, migrated.stderr
    assert f"from {OLD} to {schema.HEAD}" in migrated.stdout
    for result in replayed:
        assert result.returncode == 0, result.stderr
        assert "identical to the record" in result.stdout
