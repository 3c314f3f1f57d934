"""``palaestra export palaestrai`` on real runs: every table of the palaestrAI store it writes,
read back with plain SQL, holds palaestra's own view of the runs (:mod:`palaestra.store.rows`);
bad input exits 2 or 3 and writes nothing; ``--replace``; a PostgreSQL target."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from palaestra.report import palaestrai_schema
from palaestra.report.palaestrai_steps import SQLITE_TIME
from palaestra.store import rows
from tests.conftest import Workspace, wait_until_gone
from tests.system.curve_runs import invoke
from tests.system.palaestrai_export_runs import AGENTS, EXPERIMENT, RUNS, exported_runs

pytestmark = pytest.mark.timeout(120)

SENSOR = "palaestrai.agent.sensor_information.SensorInformation"
ACTUATOR = "palaestrai.agent.actuator_information.ActuatorInformation"
REWARD = "palaestrai.agent.reward_information.RewardInformation"
SCALAR = "Box(low=-inf, high=inf, shape=(), dtype=np.float64)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = exported_runs(tmp_path_factory)
    yield workspace
    assert not wait_until_gone(workspace.sessions)


def export(workspace: Workspace, *args: str) -> Any:
    return invoke(workspace, "export", "palaestrai", *args)


def sql(target: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(target) as db:
        return db.execute(statement, params).fetchall()


def counts(target: Path) -> dict[str, int]:
    return {
        table.name: sql(target, f"select count(*) from {table.name}")[0][0]
        for table in palaestrai_schema.WRITTEN
    }


def values(infos: str, kind: str) -> dict[str, Any]:
    """palaestrAI's information objects (jsonpickle's form) as values by uid."""
    found = {}
    for info in json.loads(infos):
        assert info["py/object"] == kind
        state = info["py/state"]
        assert isinstance(state["space"], str) and state["space"].startswith("Box(")
        found[state["uid"]] = state["value"]
    return found


def sqlite_time(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime(SQLITE_TIME)


def test_every_table_holds_palaestras_view_of_the_run(runs: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "palaestrai.db"
    result = export(runs, "export-a", "--to", f"sqlite:///{target}")

    assert result.exit_code == 0, result.stderr
    assert "Run 'export-a': 1 instance(s), 20 world states, 40 muscle actions" in result.stdout
    assert set(sql(target, "select name from sqlite_master where type = 'table'")) == {
        (name,) for name in palaestrai_schema.METADATA.tables
    }
    store = runs.store_uri
    record = rows.run_record("export-a", store_uri=store)
    (instance,) = rows.runs(run="export-a", store_uri=store)
    assert sql(target, "select id, name, document, document_json from experiments") == [
        (1, EXPERIMENT, None, None)
    ]
    ((uid, digest, experiment_id, document, content),) = sql(
        target, "select uid, hash, experiment_id, document, document_json from experiment_runs"
    )
    assert (uid, experiment_id, document) == ("export-a", 1, record["document"])
    assert len(digest) == 128 and json.loads(content)["seed"] == RUNS["export-a"]
    assert json.loads(content)["user"] is None
    assert sql(target, "select uid, status, user, created_at from experiment_run_instances") == [
        (instance["instance_uid"], "finished", None, sqlite_time(instance["started_at"]))
    ]
    phases = rows.phases("export-a", store_uri=store)
    assert [
        (uid, number, mode, json.loads(config))
        for uid, number, mode, config in sql(
            target, "select uid, number, mode, configuration from experiment_run_phases"
        )
    ] == [(p["name"], p["phase"], p["mode"], p["config"]) for p in phases]
    check_environments(target, store, {p["phase"]: p["workers"] for p in phases})
    check_agents(target, store, {p["phase"]: p["workers"] for p in phases})
    check_world_states(target, runs)
    check_muscle_actions(target, store)
    check_brain_states(target, store)


def check_environments(target: Path, store: str, workers: dict[int, int]) -> None:
    found = sql(
        target,
        "select p.number, e.uid, e.worker_uid, e.environment_conductor_uid, e.type, "
        "e.parameters, e.static_model from environments e "
        "join experiment_run_phases p on e.experiment_run_phase_id = p.id order by e.id",
    )
    expected = [
        (
            env["phase"],
            "style",
            f"Environment-style-{w}",
            "EnvironmentConductor-style",
            env["name"],
            {**env["params"], "uid": f"Environment-style-{w}", "seed": env["seeds"][w]},
            None,
        )
        for env in rows.environments("export-a", store_uri=store)
        for w in range(workers[env["phase"]])
    ]
    assert [(*row[:5], json.loads(row[5]), row[6]) for row in found] == expected


def check_agents(target: Path, store: str, workers: dict[int, int]) -> None:
    found = sql(
        target,
        "select p.number, a.uid, a.name, a.muscles, a.configuration from agents a "
        "join experiment_run_phases p on a.experiment_run_phase_id = p.id order by a.id",
    )
    expected = []
    for agent in rows.agents("export-a", store_uri=store):
        name, config = agent["agent"], agent["config"]
        expected.append(
            (
                agent["phase"],
                f"AgentConductor-{name}",
                name,
                [f"Muscle-{name}-{w}" for w in range(workers[agent["phase"]])],
                {
                    "name": name,
                    "brain": {"name": agent["brain"], "params": config["brain_params"]},
                    "muscle": {"name": agent["muscle"], "params": config["muscle_params"]},
                    "objective": {
                        "name": agent["objective"],
                        "params": config["objective_params"],
                    },
                    "sensors": config["sensors"],
                    "actuators": config["actuators"],
                },
            )
        )
    assert [(*row[:3], json.loads(row[3]), json.loads(row[4])) for row in found] == expected


def episode_ends(store: str) -> dict[tuple[int, int, int], str]:
    """The SQLite text of each episode's end, by (phase, worker, episode)."""
    return {
        (e["phase"], e["worker"], e["episode"]): sqlite_time(e["ended_at"])
        for e in rows.episodes("export-a", store_uri=store)
    }


def check_world_states(target: Path, runs: Workspace) -> None:
    found = sql(
        target,
        "select p.number, e.uid, e.worker_uid, w.execution_id, w.episode, w.step_index, "
        "w.state_dump, w.setpoints, w.done, w.mode, w.simtime_ticks, w.simtime_timestamp, "
        "w.walltime from world_states w join environments e on w.environment_id = e.id "
        "join experiment_run_phases p on e.experiment_run_phase_id = p.id order by w.id",
    )
    simtimes = {
        (phase, worker, episode, step): json.loads(simtime)
        for phase, worker, episode, step, simtime in sql(
            runs.store,
            'select p."index", w.worker, w.episode, w.step, w.simtime from world_states w '
            "join environments e on w.environment_id = e.id "
            "join experiment_run_phases p on e.experiment_run_phase_id = p.id",
        )
    }
    ends = episode_ends(runs.store_uri)
    expected = []
    for state in rows.world_states("export-a", store_uri=runs.store_uri):
        phase, worker, episode, step = (state[k] for k in ("phase", "worker", "episode", "step"))
        simtime = simtimes[phase, worker, episode, step]
        stamp = dt.datetime.fromisoformat(simtime["simtime_timestamp"])
        expected.append(
            (
                phase,
                state["environment"],
                f"Environment-style-{worker}",
                f"SimulationController-{worker}",
                episode,
                step,
                state["sensors"],
                state["setpoints"],
                int(state["done"]),
                state["mode"],
                simtime["simtime_ticks"],
                stamp.strftime(SQLITE_TIME),
                ends[phase, worker, episode],
            )
        )
    shaped = [
        (*row[:6], values(row[6], SENSOR), values(row[7], ACTUATOR), *row[8:]) for row in found
    ]
    assert len(shaped) == 20
    assert Counter(map(repr, shaped)) == Counter(map(repr, expected))


def check_muscle_actions(target: Path, store: str) -> None:
    found = sql(
        target,
        "select p.number, a.name, m.rollout_worker_uid, m.episode, m.decision_index, "
        "m.sensor_readings, m.actuator_setpoints, m.applied_actuator_setpoints, m.rewards, "
        "m.objective, m.done, m.terminated, m.truncated, m.mode, m.statistics, m.simtimes, "
        "m.walltime from muscle_actions m join agents a on m.agent_id = a.id "
        "join experiment_run_phases p on a.experiment_run_phase_id = p.id order by m.id",
    )
    statistics: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows.statistics("export-a", store_uri=store):  # brain's first: muscle's win
        key = (row["phase"], row["agent"], row["worker"], row["episode"], row["step"])
        statistics[key] = {**statistics.get(key, {}), **row["statistics"]}
    ends = episode_ends(store)
    expected = []
    for action in rows.muscle_actions("export-a", store_uri=store):
        phase, agent, worker = action["phase"], action["agent"], action["worker"]
        episode, step = action["episode"], action["step"]
        # the state an action saw: the world's step of its number (the first's is not stored)
        simtime = {"simtime_ticks": None, "simtime_timestamp": None}
        if step:
            simtime = {
                "simtime_ticks": 100 + step,
                "simtime_timestamp": f"2024-01-01T12:0{step}:00",
            }
        simtimes = {"style": simtime}
        expected.append(
            (
                phase,
                agent,
                f"Muscle-{agent}-{worker}",
                episode,
                step,
                action["sensor_readings"],
                action["actuator_setpoints"],
                action["actuator_setpoints"],
                action["rewards"],
                action["objective"],
                int(action["done"]),
                None if action["terminated"] is None else int(action["terminated"]),
                None if action["truncated"] is None else int(action["truncated"]),
                action["mode"],
                statistics.get((phase, agent, worker, episode, step), {}),
                simtimes,
                ends[phase, worker, episode],
            )
        )
    shaped = [
        (
            *row[:5],
            values(row[5], SENSOR),
            values(row[6], ACTUATOR),
            values(row[7], ACTUATOR),
            values(row[8], REWARD),
            *row[9:14],
            json.loads(row[14]),
            json.loads(row[15]),
            row[16],
        )
        for row in found
    ]
    assert len(shaped) == 40
    assert any(s[14] for s in shaped if s[1] == "learner")  # statistics of both sources
    assert Counter(map(repr, shaped)) == Counter(map(repr, expected))


def check_brain_states(target: Path, store: str) -> None:
    found = sql(
        target,
        "select p.number, a.name, b.tag, b.state, b.walltime, b.simtime_ticks from brain_states b "
        "join agents a on b.agent_id = a.id "
        "join experiment_run_phases p on a.experiment_run_phase_id = p.id order by b.id",
    )
    expected = [
        (d["phase"], d["agent"], d["tag"] or None, d["dump"], sqlite_time(d["created_at"]), None)
        for d in rows.brain_states("export-a", store_uri=store, with_dump=True)
    ]
    assert Counter(found) == Counter(expected)  # in the order they were made
    assert {tag for _, agent, tag, *_ in found if agent == "tagger"} == {"best", None}


def test_an_unknown_run_exits_2_naming_it_and_writes_nothing(
    runs: Workspace, tmp_path: Path
) -> None:
    target = tmp_path / "palaestrai.db"
    result = export(runs, "export-a", "export-c", "--to", f"sqlite:///{target}")

    assert result.exit_code == 2
    assert "no run 'export-c'" in result.stderr and "export-a" in result.stderr
    assert not target.exists()


def test_a_run_the_target_holds_is_refused_and_replace_writes_it_anew(
    runs: Workspace, tmp_path: Path
) -> None:
    target = tmp_path / "palaestrai.db"
    uri = f"sqlite:///{target}"
    assert export(runs, "export-a", "--to", uri).exit_code == 0
    once = counts(target)

    again = export(runs, "export-b", "export-a", "--to", uri)

    assert again.exit_code == 2
    assert "holds run 'export-a' (experiment 'export-tests') already" in again.stderr
    assert "--replace" in again.stderr
    assert counts(target) == once  # export-b neither

    replaced = export(runs, "export-a", "export-b", "--to", uri, "--replace")

    assert replaced.exit_code == 0, replaced.stderr
    assert "Run 'export-a' replaced:" in replaced.stdout
    assert "Run 'export-b': 1 instance(s)" in replaced.stdout
    both = counts(target)
    assert both["experiments"] == 1
    assert {k: both[k] - once[k] for k in once if k != "experiments"} == {
        k: v for k, v in once.items() if k != "experiments"
    }
    assert sql(target, "select uid from experiment_runs order by id") == [
        ("export-a",),
        ("export-b",),
    ]
    orphans = sql(
        target,
        "select count(*) from muscle_actions where agent_id not in (select id from agents)",
    )
    assert orphans == [(0,)]


def test_a_failing_run_leaves_nothing_of_it(runs: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "palaestrai.db"
    uri = f"sqlite:///{target}"
    assert export(runs, "export-a", "--to", uri).exit_code == 0
    once = counts(target)
    with sqlite3.connect(target) as db:  # fails export-b's actions of its test phase
        db.execute(
            "create trigger refuse before insert on muscle_actions when new.mode = 'test' "
            "and (select count(*) from experiment_runs) > 1 "
            "begin select raise(abort, 'refused by the test'); end"
        )

    result = export(runs, "export-b", "--to", uri)

    assert result.exit_code == 3
    assert f"target {uri}: cannot write run 'export-b'" in result.stderr
    assert "refused by the test" in result.stderr
    assert counts(target) == once


def test_bad_targets_exit_3_naming_them(runs: Workspace, tmp_path: Path) -> None:
    cases = {
        "not a url": "target not a url: not a database URL",
        "postgresql+psycopg://someone:secret@127.0.0.1:1/db": (
            "target postgresql+psycopg://someone:***@127.0.0.1:1/db: cannot connect"
        ),
        runs.store_uri: f"target {runs.store_uri} is a palaestra store",
    }
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("create table agents (id integer primary key, label text)")
    cases[f"sqlite:///{other}"] = "agents lacks uid, name, muscles"
    for target, said in cases.items():
        result = export(runs, "export-a", "--to", target)
        assert result.exit_code == 3, (target, result.stderr)
        assert said in result.stderr, result.stderr
        assert "secret" not in result.stderr
    assert sql(other, "select name from sqlite_master where type = 'table'") == [("agents",)]


def test_a_target_with_palaestrais_tables_keeps_them_and_its_rows(
    runs: Workspace, tmp_path: Path
) -> None:
    target = tmp_path / "palaestrai.db"
    engine = create_engine(f"sqlite:///{target}")
    with engine.begin() as connection:  # palaestrAI's tables but one, an experiment of its own
        palaestrai_schema.METADATA.create_all(
            connection, tables=[t for t in palaestrai_schema.WRITTEN]
        )
        connection.execute(text("insert into experiments (name) values ('theirs')"))
        connection.execute(text(f"insert into experiments (name) values ('{EXPERIMENT}')"))
    engine.dispose()

    result = export(runs, "export-a", "--to", f"sqlite:///{target}")

    assert result.exit_code == 0, result.stderr
    assert sql(target, "select id, name from experiments") == [(1, "theirs"), (2, EXPERIMENT)]
    assert sql(target, "select uid, experiment_id from experiment_runs") == [("export-a", 2)]
    assert ("templates",) in sql(target, "select name from sqlite_master where type = 'table'")


def test_export_to_postgresql(runs: Workspace, tmp_path: Path, pg_uri: str) -> None:
    sqlite_target = tmp_path / "palaestrai.db"
    assert export(runs, *RUNS, "--to", f"sqlite:///{sqlite_target}").exit_code == 0
    plain = pg_uri.replace(
        "postgresql+psycopg://", "postgresql://"
    )  # as palaestrAI's users write it

    result = export(runs, *RUNS, "--to", plain)

    assert result.exit_code == 0, result.stderr
    engine = create_engine(pg_uri)
    try:
        with engine.connect() as connection:
            found = {
                table.name: connection.scalar(text(f"select count(*) from {table.name}"))
                for table in palaestrai_schema.WRITTEN
            }
            actions = connection.execute(
                text(
                    "select a.name, m.decision_index, m.sensor_readings, m.objective, "
                    "m.mode::text, m.statistics, m.walltime from muscle_actions m "
                    "join agents a on m.agent_id = a.id order by m.id limit 12"
                )
            ).all()
            dumps = connection.execute(
                text("select tag, state from brain_states order by id")
            ).all()
    finally:
        engine.dispose()
    assert found == counts(sqlite_target)
    expected = sql(
        sqlite_target,
        "select a.name, m.decision_index, m.sensor_readings, m.objective, m.mode, "
        "m.statistics, m.walltime from muscle_actions m join agents a on m.agent_id = a.id "
        "order by m.id limit 12",
    )
    assert [
        (name, step, json.loads(readings), objective, mode, json.loads(stats), when)
        for name, step, readings, objective, mode, stats, when in expected
    ] == [
        (name, step, readings, objective, mode, stats, sqlite_time(when))
        for name, step, readings, objective, mode, stats, when in actions
    ]
    assert [(tag, bytes(state)) for tag, state in dumps] == sql(
        sqlite_target, "select tag, state from brain_states order by id"
    )
    assert {name for name, *_ in actions} <= set(AGENTS)


def test_evaluation_rollouts_are_palaestrais_evaluate_phase(
    workspace: Workspace, tmp_path: Path
) -> None:
    """palaestrAI records an evaluation rollout (``evaluate_every``) in a phase row of mode
    ``evaluate`` (same uid and number) with its own environments and agents, its steps in mode
    ``evaluate``; the training episodes stay in the ``train`` phase."""
    from tests.system.test_evaluation_condition import SUCCESS, write

    path, _ = write(workspace, SUCCESS, start=0.1, rise=0.1, every=1)  # 5 evaluations
    assert workspace.run("experiment-start", "-q", str(path)).returncode == 0
    target = tmp_path / "palaestrai.db"

    result = export(workspace, "evaluation", "--to", f"sqlite:///{target}")

    assert result.exit_code == 0, result.stderr
    phases = sql(target, "select id, uid, number, mode, configuration from experiment_run_phases")
    assert [(uid, number, mode) for _, uid, number, mode, _ in phases] == [
        ("training", 0, "train"),
        ("training", 0, "evaluate"),
    ]
    assert json.loads(phases[1][4]) == {"episodes": 1, "worker": 1, "mode": "evaluate"}
    for table in ("agents", "environments"):
        assert sql(
            target, f"select experiment_run_phase_id, count(*) from {table} group by 1"
        ) == [(phases[0][0], 1), (phases[1][0], 1)]
    # episodes 0, 2, ... 8 trained, 1, 3, ... 9 (one after each training episode) evaluated
    expected = {(e, mode, mode) for e in range(10) for mode in ["evaluate" if e % 2 else "train"]}
    actions = sql(
        target,
        "select m.episode, m.mode, p.mode, m.actuator_setpoints from muscle_actions m "
        "join agents a on m.agent_id = a.id "
        "join experiment_run_phases p on a.experiment_run_phase_id = p.id",
    )
    assert {(e, mode, phase) for e, mode, phase, _ in actions} == expected
    assert {
        values(setpoints, ACTUATOR)["counter.push"] for e, _, _, setpoints in actions if e % 2
    } == {0.5}  # the Muscle's test mode
    states = sql(
        target,
        "select w.episode, w.mode, p.mode from world_states w "
        "join environments e on w.environment_id = e.id "
        "join experiment_run_phases p on e.experiment_run_phase_id = p.id",
    )
    assert set(states) == expected
    # each result of the Brain's evaluate_rollouts, identified and hashed as palaestrAI does
    columns = "evaluation_id, experiment_run_uid, experiment_run_instance_uid, "
    columns += "experiment_run_phase, agent_name, evaluation_episode, metrics, checkpoint_id, "
    columns += "checkpoint_hash, payload_hash"
    stored = sql(target, f"select {columns} from stored_evaluation_results")
    (instance,) = sql(target, "select uid from experiment_run_instances")
    assert [(row[4], row[5], json.loads(row[6])) for row in stored] == [
        ("pusher", k, {"score": 0.1 + 0.1 * k}) for k in range(5)
    ]
    for row in stored:
        payload = dict(zip(columns.split(", ")[:-1], row[:-1], strict=True))
        payload["metrics"] = json.loads(payload["metrics"])
        identity = f"evaluation\0{instance[0]}\0{0}\0pusher\0{payload['evaluation_episode']}"
        assert payload["evaluation_id"] == hashlib.sha256(identity.encode()).hexdigest()
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        assert row[-1] == hashlib.sha256(text.encode()).hexdigest()
