"""Tests of the results commands (palaestra/cli/results.py) through click's CliRunner, on
stores written by the StoreWriter (``write_store`` of tests/unit/test_store_query.py)."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import Result
from pandas.testing import assert_frame_equal

from palaestra.cli.main import cli
from palaestra.store import query, rows
from palaestra.store.writer import StoreWriter
from tests.conftest import cli_runner
from tests.unit.test_store_query import RUN, request, run_start, write_store

JSON_COLUMNS = ("sensor_readings", "actuator_setpoints", "rewards", "sensors", "setpoints")


def invoke(uri: str, args: list[str], input: str | None = None) -> Result:
    env = {"PALAESTRA_STORE_URI": uri, "PALAESTRA_DATA_PATH": None, "COLUMNS": "80"}
    return cli_runner(env).invoke(cli, args, input=input, prog_name="palaestra")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store only read by the tests that use it."""
    return write_store(f"sqlite:///{tmp_path_factory.mktemp('cli')}/palaestra.db")


@pytest.fixture
def own_store(tmp_path: Path) -> str:
    """A store of this test only (``clean`` changes it)."""
    return write_store(f"sqlite:///{tmp_path}/palaestra.db")


def plain(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as JSON gives them back: timestamps as ISO text."""
    return [
        {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in row.items()}
        for row in found
    ]


# --- experiment-list -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["experiment-list", "list"])
def test_list_is_a_table_that_fits_80_columns(store: str, command: str) -> None:
    result = invoke(store, [command])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split() == [
        "run", "experiment", "phases", "episodes", "started", "(UTC)", "duration", "status",
    ]  # fmt: skip
    body = lines[2:]
    assert [line.split()[:6] for line in body] == [
        ["run-q", "exp-q", "1", "1", "2024-05-01", "12:00"],
        ["run-q", "exp-q", "2", "5", "2024-05-01", "12:00"],
        ["run-q2", "exp-q", "0", "0", "2024-05-01", "12:00"],
        ["run-other", "exp-other", "1", "1", "2024-05-01", "12:00"],
    ]
    assert [line.split()[6:] for line in body[1:]] == [
        ["10.0", "s", "finished"],
        ["-", "running"],
        ["6.0", "s", "finished"],
    ]
    assert "6.0 s error: boom: the" in body[0]  # the reason's first line, cut to fit


def test_list_gives_long_run_uids_room(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    request(writer, run_start("taking-turns-run", "i", "dummy-experiments"))
    asyncio.run(writer.teardown())

    result = invoke(uri, ["list"])

    assert result.exit_code == 0, result.output
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    assert "taking-turns-run" in result.stdout and "running" in result.stdout


def test_list_as_json(store: str) -> None:
    result = invoke(store, ["list", "--format", "json"])

    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert listed == plain(rows.runs(store_uri=store))
    assert listed[1]["instance_uid"] == "new" and listed[1]["episodes"] == 5
    assert dt.datetime.fromisoformat(listed[0]["started_at"]).tzinfo == dt.UTC


def test_list_of_an_empty_store_as_json(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/empty.db"
    StoreWriter("store", uri).open()
    assert invoke(uri, ["list", "--format", "json"]).stdout == "[]\n"
    assert invoke(uri, ["list"]).stdout == "No runs in the store.\n"


# --- experiment-show -------------------------------------------------------------------------


def test_show_prints_phases_agents_and_rewards(store: str) -> None:
    result = invoke(store, ["experiment-show", RUN])

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("Run run-q (experiment exp-q), instance new: finished\n")
    for title in ("Phases", "Agents", "Episode rewards"):
        assert f"\n{title}" in out
    phases = out.split("Phases", 1)[1].split("Agents", 1)[0].splitlines()[3:]
    assert [line.split()[:6] for line in phases if line] == [
        ["0", "learn", "train", "2", "2", "finished"],
        ["1", "check", "test", "1", "1", "finished"],
    ]
    assert '{"brain_state_id":1}' in out
    rewards = out.split("Episode rewards", 1)[1].splitlines()[3:]
    assert [line.split()[:4] for line in rewards if line] == [
        ["0", "learn", "attacker", "4"],
        ["0", "learn", "defender", "4"],
        ["1", "check", "attacker", "1"],
        ["1", "check", "defender", "1"],
    ]


def test_show_as_json_of_an_older_instance(store: str) -> None:
    result = invoke(store, ["experiment-show", RUN, "--instance", "old", "--format", "json"])

    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["run"]["instance_uid"] == "old"
    assert shown["run"]["reason"].startswith("boom")
    assert [p["phase"] for p in shown["phases"]] == [0]
    assert [a["agent"] for a in shown["agents"]] == ["attacker", "defender"]
    episodes = query.episode_rewards(RUN, store_uri=store, instance="old")
    attacker = episodes[episodes["agent"] == "attacker"]["reward"]
    assert shown["rewards"][0] == {
        "phase": 0, "phase_name": "learn", "mode": "train", "agent": "attacker",
        "episodes": 1, "mean": attacker.mean(), "min": attacker.min(), "max": attacker.max(),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run-x"], "no run 'run-x' in the store"),
        ([RUN, "--instance", "x"], "run 'run-q' has no instance 'x'"),
    ],
)
def test_show_of_an_unknown_run_or_instance_is_exit_2(
    store: str, args: list[str], message: str
) -> None:
    result = invoke(store, ["experiment-show", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {message}")
    assert "Traceback" not in result.output


# --- results ---------------------------------------------------------------------------------


def decoded(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its JSON text columns decoded."""
    for name in frame.columns:
        if name in JSON_COLUMNS:
            frame[name] = [json.loads(v) for v in frame[name]]
    return frame


def test_results_as_csv_file_reads_back_as_the_query_gives(store: str, tmp_path: Path) -> None:
    out = tmp_path / "actions.csv"
    args = ["results", RUN, "--phase", "learn", "--agent", "attacker", "-o", str(out)]
    result = invoke(store, args)

    assert result.exit_code == 0, result.output
    assert "Wrote 12 rows of muscle_actions" in result.stderr
    expected = query.muscle_actions(RUN, phase="learn", agent="attacker", store_uri=store)
    unsaid = {"terminated": float, "truncated": float}  # all None: CSV reads them back as NaN
    assert_frame_equal(decoded(pd.read_csv(out)), expected.astype(unsaid))


def test_results_as_csv_on_stdout_needs_no_pandas(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    result = invoke(store, ["results", RUN, "--table", "world_states", "--episode", "1"])

    assert result.exit_code == 0, result.output
    read = list(csv.DictReader(io.StringIO(result.stdout)))
    expected = rows.world_states(RUN, episode=1, store_uri=store)
    assert len(read) == len(expected) == 6
    assert list(read[0]) == list(expected.columns)
    for got, want in zip(read, expected, strict=True):
        assert json.loads(got["sensors"]) == want["sensors"]
        assert (got["step"], got["done"]) == (str(want["step"]), str(want["done"]))


def test_results_as_json_without_pandas(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    out = tmp_path / "dumps.json"
    result = invoke(store, ["results", RUN, "--table", "brain_states", "-o", str(out)])

    assert result.exit_code == 0, result.output
    exported = json.loads(out.read_text())
    assert exported == plain(rows.brain_states(RUN, store_uri=store))
    assert "dump" not in exported[0]


def test_results_as_json_expanded(store: str) -> None:
    result = invoke(store, ["results", RUN, "--phase", "1", "--expand", "--format", "json"])

    assert result.exit_code == 0, result.output
    expected = rows.expand(rows.muscle_actions(RUN, phase=1, store_uri=store))
    assert json.loads(result.stdout) == expected
    assert "setpoint.myenv.3" in expected.columns


@pytest.mark.parametrize(
    ("table", "args"),
    [
        ("muscle_actions", ["--phase", "0", "--phase", "check", "--worker", "0"]),
        ("world_states", ["--expand", "--environment", "myenv"]),
        ("episode_rewards", ["--mode", "train"]),
        ("brain_states", ["--agent", "defender"]),
    ],
)
def test_results_as_parquet_read_back_as_the_query_gives(
    store: str, tmp_path: Path, table: str, args: list[str]
) -> None:
    out = tmp_path / "out.parquet"
    result = invoke(store, ["results", RUN, "--table", table, *args, "-o", str(out)])

    assert result.exit_code == 0, result.output
    read = pd.read_parquet(out)
    for name in read.columns:  # JSON values are JSON text in parquet
        if read[name].dtype == object or name in JSON_COLUMNS or name.startswith("sensor."):
            read[name] = [json.loads(v) if isinstance(v, str) else v for v in read[name]]
    calls = {
        "muscle_actions": lambda: query.muscle_actions(
            RUN, phase=[0, "check"], worker=0, store_uri=store
        ),
        "world_states": lambda: query.world_states(
            RUN, environment="myenv", expand=True, store_uri=store
        ),
        "episode_rewards": lambda: query.episode_rewards(RUN, mode="train", store_uri=store),
        "brain_states": lambda: query.brain_states(RUN, agent="defender", store_uri=store),
    }
    expected = calls[table]()
    assert_frame_equal(read, expected)


def test_parquet_without_pyarrow_names_the_extra(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    result = invoke(store, ["results", RUN, "-o", str(tmp_path / "x.parquet")])

    assert result.exit_code == 2
    assert "pip install 'palaestra[parquet]'" in result.stderr
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--table", "world_states", "--agent", "a"], "--agent does not apply to --table"),
        (["--table", "brain_states", "--expand"], "--expand does not apply to --table"),
        (["--format", "parquet"], "--format parquet needs a file: -o FILE"),
        (["-o", "/nonexistent/dir/x.csv"], "cannot write /nonexistent/dir/x.csv"),
        (["--instance", "nope"], "run 'run-q' has no instance 'nope'"),
    ],
)
def test_results_with_invalid_options_is_exit_2(store: str, args: list[str], message: str) -> None:
    result = invoke(store, ["results", RUN, *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_results_of_an_unknown_run_is_exit_2(store: str) -> None:
    result = invoke(store, ["results", "run-x"])
    assert result.exit_code == 2
    assert "no run 'run-x'" in result.stderr and "run-q" in result.stderr


# --- clean -----------------------------------------------------------------------------------


def test_clean_asks_first_and_deletes_nothing_when_denied(own_store: str) -> None:
    result = invoke(own_store, ["clean", RUN], input="n\n")

    assert result.exit_code == 1
    assert "run 'run-q': 2 instances, 3 phases, 6 agents, 3 environments, 18 world states, " \
        "36 muscle actions, 8 brain states" in result.stdout  # fmt: skip
    assert "Delete? [y/N]" in result.stdout
    assert len(rows.runs(store_uri=own_store)) == 4


def test_clean_after_yes_deletes_the_run_and_keeps_the_others(own_store: str) -> None:
    other_before = query.muscle_actions("run-other", store_uri=own_store)

    result = invoke(own_store, ["clean", RUN], input="y\n")

    assert result.exit_code == 0, result.output
    assert f"Deleted run '{RUN}'" in result.stdout
    assert [r["run_uid"] for r in rows.runs(store_uri=own_store)] == ["run-q2", "run-other"]
    assert_frame_equal(query.muscle_actions("run-other", store_uri=own_store), other_before)
    assert [e["experiment_uid"] for e in rows.experiments(store_uri=own_store)] == [
        "exp-q",
        "exp-other",
    ]
    with pytest.raises(LookupError):
        rows.brain_states(RUN, store_uri=own_store)


def test_clean_with_yes_deletes_an_experiment_left_without_runs(own_store: str) -> None:
    result = invoke(own_store, ["clean", RUN, "run-q2", "--yes", "--force"])

    assert result.exit_code == 0, result.output
    assert "Delete?" not in result.stdout
    assert "experiment 'exp-q' (no runs left)" in result.stdout
    assert "1 instance still marked running" in result.stdout
    assert [r["run_uid"] for r in rows.runs(store_uri=own_store)] == ["run-other"]
    assert [e["experiment_uid"] for e in rows.experiments(store_uri=own_store)] == ["exp-other"]
    assert len(rows.world_states("run-other", store_uri=own_store)) == 3


def test_clean_refuses_a_run_still_running_and_deletes_nothing(own_store: str) -> None:
    result = invoke(own_store, ["clean", RUN, "run-q2", "--yes"])

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: run 'run-q2' is still running (instance q2, on host")
    assert "--force" in result.stderr and "Traceback" not in result.output
    assert "Deleted" not in result.stdout
    assert len(rows.runs(store_uri=own_store)) == 4


def test_clean_with_force_deletes_a_run_left_running(own_store: str) -> None:
    result = invoke(own_store, ["clean", "run-q2", "--force"], input="y\n")

    assert result.exit_code == 0, result.output
    assert "run 'run-q2': 1 instance; 1 instance still marked running" in result.stdout
    assert [r["run_uid"] for r in rows.runs(store_uri=own_store)] == [RUN, RUN, "run-other"]


def test_delete_run_checks_the_running_instance_in_its_transaction(own_store: str) -> None:
    with pytest.raises(rows.RunStillRunningError, match="run 'run-q2' is still running"):
        rows.delete_run("run-q2", store_uri=own_store)
    assert len(rows.runs(store_uri=own_store)) == 4
    rows.delete_run(RUN, store_uri=own_store)  # an older instance in error, the newest finished
    assert (
        rows.delete_run("run-q2", store_uri=own_store, force=True)["experiment_run_instances"] == 1
    )


def test_clean_of_an_unknown_run_is_exit_2_and_deletes_nothing(own_store: str) -> None:
    result = invoke(own_store, ["clean", RUN, "run-x", "--yes"])

    assert result.exit_code == 2
    assert result.stderr.startswith("Error: no run 'run-x' in the store")
    assert "Traceback" not in result.output
    assert len(rows.runs(store_uri=own_store)) == 4


def test_clean_needs_a_run(own_store: str) -> None:
    assert invoke(own_store, ["clean"]).exit_code == 2
