"""Tests of the results commands (palaestra/cli/results.py) through click's CliRunner, on
stores written by the StoreWriter (``write_store`` of tests/unit/test_store_query.py)."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import re
import sqlite3
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pytest
from click.testing import Result
from pandas.testing import assert_frame_equal

from palaestra.cli.main import cli
from palaestra.cli.results import write_csv
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import code_reload_values, episode_values
from palaestra.store import query, rows
from palaestra.store.writer import StoreWriter
from tests.conftest import actions_message, cli_runner, world_message
from tests.unit.test_store_query import (
    RUN,
    action_rows,
    episode_rows,
    phase_start,
    record_phase,
    request,
    run_start,
    write_store,
)

JSON_COLUMNS = ("sensor_readings", "actuator_setpoints", "rewards", "sensors", "setpoints")


def invoke(
    uri: str,
    args: list[str],
    input: str | None = None,
    tty: bool = False,
    data_path: Path | None = None,
) -> Result:
    """Run ``palaestra args`` on the store ``uri`` (and ``data_path``), its output a pipe or
    (``tty``) a terminal of 80 columns as rich sees it."""
    env = {
        "PALAESTRA_STORE_URI": uri,
        "PALAESTRA_DATA_PATH": None if data_path is None else str(data_path),
        "COLUMNS": "80",
        "TTY_COMPATIBLE": "1" if tty else "0",
        "FORCE_COLOR": None,
        "NO_COLOR": None,
    }
    return cli_runner(env).invoke(cli, args, input=input, prog_name="palaestra")


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


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
def test_list_piped_is_a_plain_table_at_full_width(store: str, command: str) -> None:
    result = invoke(store, [command])

    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout  # no colour in a pipe
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "run", "experiment", "instance", "episodes", "started", "(UTC)", "duration", "status",
    ]  # fmt: skip
    body = lines[2:]
    assert [line.split()[:6] for line in body] == [
        ["run-q", "exp-q", "old", "1/1", "2024-05-01", "12:00"],
        ["run-q", "exp-q", "new", "5/5", "2024-05-01", "12:00"],
        ["run-q2", "exp-q", "q2", "0/0", "2024-05-01", "12:00"],
        ["run-other", "exp-other", "o1", "1/1", "2024-05-01", "12:00"],
    ]
    assert [line.split()[6:] for line in body[1:]] == [
        ["10.0", "s", "finished"],
        ["-", "stale"],  # its heartbeat is of 2024
        ["6.0", "s", "finished"],
    ]
    assert body[0].rstrip().endswith("6.0 s error: boom: the muscle died")  # not cut at 80


def test_list_on_a_terminal_fits_it_folds_the_reason_and_colours_statuses(store: str) -> None:
    result = invoke(store, ["list"], tty=True)

    assert result.exit_code == 0, result.output
    lines = strip_ansi(result.stdout).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert [line.split()[:2] for line in lines[2:] if line.startswith("run")] == [
        ["run-q", "exp-q"],
        ["run-q", "exp-q"],
        ["run-q2", "exp-q"],
        ["run-other", "exp-other"],
    ]  # run and experiment never wrap
    at = lines[0].index("status")
    folded = " ".join(line[at:].strip() for line in lines[2:4])
    assert folded == "error: boom: the muscle died"  # folded onto a second line, not cut
    assert "\x1b[1;31merror" in result.stdout and "\x1b[32mfinished" in result.stdout


def test_list_gives_long_run_uids_room(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    request(writer, run_start("taking-turns-run", "i", "dummy-experiments"))
    asyncio.run(writer.teardown())

    result = invoke(uri, ["list"], tty=True)

    assert result.exit_code == 0, result.output
    shown = strip_ansi(result.stdout)
    assert all(len(line) <= 80 for line in shown.splitlines())
    run = "".join(line.split()[0] for line in shown.splitlines()[2:])  # folded, not cut
    assert run == "taking-turns-run"
    assert shown.splitlines()[2].split()[1:3] == ["dummy-experiments", "i"]
    assert shown.splitlines()[2].rstrip().endswith(" - running")


def test_list_as_json(store: str) -> None:
    result = invoke(store, ["list", "--format", "json"])

    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [{k: v for k, v in row.items() if k != "episodes_done"} for row in listed] == plain(
        rows.runs(store_uri=store)
    )
    assert listed[1]["instance_uid"] == "new" and listed[1]["episodes"] == 5
    assert [row["episodes_done"] for row in listed] == [1, 5, 0, 1]
    assert dt.datetime.fromisoformat(listed[0]["started_at"]).tzinfo == dt.UTC


def test_list_of_an_empty_store_as_json(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/empty.db"
    StoreWriter("store", uri).open()
    assert invoke(uri, ["list", "--format", "json"]).stdout == "[]\n"
    assert invoke(uri, ["list"]).stdout == "No runs in the store.\n"


@pytest.mark.parametrize("uri", ["none", "off"])
@pytest.mark.parametrize("command", [["list"], ["experiment-show", RUN], ["results", RUN]])
def test_reading_with_store_uri_none_says_it_records_nothing(uri: str, command: list[str]) -> None:
    result = invoke(uri, command)

    assert result.exit_code == 3, result.output
    assert result.stderr.startswith(f"Error: store_uri is '{uri}', which records nothing")
    assert "not a valid database URL" not in result.stderr  # (SQLAlchemy's parse of 'none')


@pytest.mark.parametrize(
    ("uri", "port"),
    [
        ("postgresql://me:secret@db.example:54x/runs", "'54x'"),
        ("postgresql://me@db.example:/runs", "none after the host's colon"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["experiment-show", RUN],
        ["results", RUN],
        ["clean", RUN, "--yes"],
        ["database-migrate"],
        ["export", "palaestrai", RUN, "--to", "sqlite:///x.db"],
    ],
)
def test_a_store_uri_whose_port_is_no_number_exits_2_naming_it(
    uri: str, port: str, command: list[str]
) -> None:
    """SQLAlchemy's parse of such a URI raises a ValueError, not its ArgumentError: these
    commands failed with its bare traceback (exit 1), then with exit 3, while the store writer
    (libpq) took an empty port for the default one and recorded the run. Every command refuses
    it as it reads the runtime config, the store writer's too."""
    result = invoke(uri, command)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: store_uri 'postgresql+psycopg://me"), result.stderr
    assert f"its port is no number ({port})" in result.stderr
    assert "secret" not in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["experiment-show", RUN],
        ["clean", RUN, "--yes"],
        ["database-create"],
        ["database-migrate"],
    ],
)
def test_a_sqlite_store_uri_with_a_query_exits_2_saying_how_to_write_it(
    tmp_path: Path, command: list[str]
) -> None:
    """A '?' in a SQLite store's path starts the URI's query: ``database-migrate`` on
    ``sqlite:////tmp/x/q?uery.db`` made the store ``/tmp/x/q`` and exited 0, the readers read
    that file, and the store writer refused the URI (exit 3)."""
    uri = f"sqlite:///{tmp_path}/q?uery.db"

    result = invoke(uri, command)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: store_uri '{uri}': "), result.stderr
    assert f"the store would be the file {tmp_path}/q" in result.stderr
    assert f"sqlite:///{tmp_path}/q%3Fuery.db" in result.stderr
    assert not list(tmp_path.iterdir())  # nothing made


def test_an_export_target_whose_port_is_no_number_exits_3_naming_it(store: str) -> None:
    result = invoke(store, ["export", "palaestrai", RUN, "--to", "postgresql://me:secret@h:5x/db"])

    assert result.exit_code == 3, result.output
    assert "target postgresql://me:***@h:5x/db: not a database URL" in result.stderr


@pytest.mark.parametrize("exported_before", [False, True])
def test_export_tensorboard_writes_no_run_when_one_cannot_be(
    store: str, tmp_path: Path, exported_before: bool
) -> None:
    """A run after one that could be written is unknown (a typo), or in -o already: the first
    was written, and the same command, corrected, refused it as exported before."""
    pytest.importorskip("tensorboard")
    logs = tmp_path / "tb"
    if exported_before:
        (logs / RUN).mkdir(parents=True)
        (logs / RUN / "events.out.tfevents.1.box").write_bytes(b"")
    second = RUN if exported_before else "run-x"

    result = invoke(store, ["export", "tensorboard", "run-other", second, "-o", str(logs)])

    assert result.exit_code == 2, result.output
    said = "already holds TensorBoard event files" if exported_before else "no run 'run-x'"
    assert said in result.stderr
    assert not list((logs / "run-other").glob("events.out.tfevents.*"))


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
        ["0", "learn", "train", "2", "4/4", "finished"],
        ["1", "check", "test", "1", "1/1", "finished"],
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
        "evaluation": False, "episodes": 1,
        "mean": attacker.mean(), "min": attacker.min(), "max": attacker.max(),
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


@pytest.mark.parametrize("tty", [False, True])
def test_show_gives_names_as_they_are_never_as_rich_markup(tmp_path: Path, tty: bool) -> None:
    """Names in square brackets were read as rich's markup: ``def[v2]`` showed as ``def``,
    ``[bold]att`` as ``att`` (bold), the phase ``[red]p0`` as ``p0``."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-m", "m1", "[e]")).ids["instance"]
        start = phase_start(instance, 0, "[red]p0", "train", 1, 1)
        named = zip(start.agents, NAMES, strict=True)
        agents = [msgspec.structs.replace(agent, name=name) for agent, name in named]
        ids = request(writer, msgspec.structs.replace(start, agents=agents)).ids
        played(writer, ids, range(1), NAMES)
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())

    shown = strip_ansi(invoke(uri, ["experiment-show", "run-m"], tty=tty).stdout)
    listed = strip_ansi(invoke(uri, ["list"], tty=tty).stdout)

    rewards = shown.split("Episode rewards", 1)[1].splitlines()[3:5]
    assert [line.split()[:3] for line in rewards] == [["0", "[red]p0", name] for name in NAMES]
    assert "0 [red]p0 def[v2]" in shown.split("Agents", 1)[1]
    assert listed.splitlines()[2].split()[:2] == ["run-m", "[e]"]


NAMES = ("def[v2]", "[bold]att")


HOSTILE = "ValueError: \x1b]0;owned\x07bad\x1b[2J value\r\x9b2J\x00\nsecond line"
"""A plug-in's exception text: a window title, a clear screen (ESC and C1 CSI), a carriage
return, a NUL, and a second line."""
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but newline and tab."""


def failed_run(uri: str, run: str, reason: str, reload_error: str | None = None) -> None:
    """Record a run that failed with ``reason`` in its phase 0 (``learn``, 3 episodes planned)
    before an episode ended; with ``reload_error``, after a reload that failed with it."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start(run, f"{run}-1", "e")).ids["instance"]
        ids = request(writer, phase_start(instance, 0, "learn", "train", 1, 3)).ids
        if reload_error is not None:
            failed = m.CodeReloadRow("muscle:a", 0, 0, 3, "m", "/m.py", False, reload_error, 1.5e9)
            values = [code_reload_values(ids["phase"], failed)]
            writer.accept(m.Rows(table="code_reloads", rows=values))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="error"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="error", reason=reason))
    finally:
        asyncio.run(writer.teardown())


@pytest.mark.parametrize("tty", [False, True])
def test_show_and_list_print_stored_texts_control_characters_escaped(
    tmp_path: Path, tty: bool
) -> None:
    """A run's reason and a failed reload's traceback (a plug-in's exception text) reached the
    terminal with their control characters raw: an ESC sequence in them could set the window
    title or clear the screen. They are printed as escapes (``\\x1b``); newlines stay."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    failed_run(uri, "run-h", HOSTILE, reload_error=HOSTILE)

    shown = invoke(uri, ["experiment-show", "run-h"], tty=tty)
    listed = invoke(uri, ["list"], tty=tty)

    assert shown.exit_code == 0 and listed.exit_code == 0, shown.output + listed.output
    for output in (strip_ansi(shown.stdout), strip_ansi(listed.stdout)):
        assert not CONTROLS.search(output), repr(output)
    escaped = "ValueError: \\x1b]0;owned\\x07bad\\x1b[2J value\\x0d\\x9b2J\\x00"
    assert f"Reason: {escaped}\nsecond line\n" in strip_ansi(shown.stdout)
    assert "FAILED, old code kept: second line" in shown.stdout  # the traceback's last line
    if not tty:  # (folded on a terminal)
        assert listed.stdout.splitlines()[2].rstrip().endswith(f"error: {escaped}")


@pytest.fixture
def interrupted_store(tmp_path: Path) -> str:
    """``run-i``: phase 0 planned 2 workers x 10 episodes, stopped by Ctrl-C after 3 episodes
    of worker 0 and 2 of worker 1; a long brain class name, loaded from a run with a long uid;
    episode rewards in the 100,000s."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("run-i", "0f1e2d3c-aaaa-bbbb-cccc-000000000001", "e"))
        start = phase_start(instance.ids["instance"], 0, "learn", "train", 2, 10)
        loaded = {"run": "an-earlier-run-with-a-long-uid", "agent": "attacker", "phase": 1}
        agent = msgspec.structs.replace(start.agents[0], brain=LONG_BRAIN, loaded_from=loaded)
        ids = request(writer, msgspec.structs.replace(start, agents=[agent])).ids
        for worker, episodes in ((0, 3), (1, 2)):
            rewards = {"myenv.r": 41600.0}
            writer.accept(
                action_rows(ids["agent:attacker"], "attacker", worker, episodes, rewards)
            )
            writer.accept(episode_rows(ids["phase"], worker, range(episodes)))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="cancelled"))
        request(
            writer,
            m.StoreRunEnd(
                instance_id=instance.ids["instance"], status="cancelled", reason="SIGINT"
            ),
        )
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_list_and_show_count_no_episode_cut_short(interrupted_store: str) -> None:
    """Ctrl-C in worker 1's episode 2, whose steps are in but which did not end (no
    ``episodes`` row), and in phase 1's first episode: neither is an episode done, nor has
    a reward (they were counted as done and summed as whole episodes)."""
    writer = StoreWriter("store", interrupted_store)
    writer.open()
    try:
        ids = rows_ids(interrupted_store)
        rewards = {"myenv.r": 41600.0}
        cut = action_rows(ids["attacker"], "attacker", 1, 3, rewards)
        writer.accept(msgspec.structs.replace(cut, rows=cut.rows[-3:-1]))  # episode 2's steps 0, 1
        start = phase_start(ids["instance"], 1, "check", "test", 1, 1)
        later = request(writer, start).ids
        writer.accept(action_rows(later["agent:attacker"], "attacker", 0, 1, rewards))
    finally:
        asyncio.run(writer.teardown())

    listed = json.loads(invoke(interrupted_store, ["list", "--format", "json"]).stdout)
    assert (listed[0]["episodes_done"], listed[0]["episodes"]) == (5, 21)
    shown = json.loads(
        invoke(interrupted_store, ["experiment-show", "run-i", "--format", "json"]).stdout
    )
    assert [row["episodes_done"] for row in shown["phases"]] == [5, 0]
    assert [(row["phase"], row["episodes"]) for row in shown["rewards"]] == [(0, 5)]
    rewards_csv = invoke(interrupted_store, ["results", "run-i", "--table", "episode_rewards"])
    assert len(rewards_csv.stdout.splitlines()) == 1 + 5


def test_an_instance_recorded_before_episodes_rows_counts_its_episodes_with_actions(
    interrupted_store: str,
) -> None:
    """A store before revision 0005 has no ``episodes`` rows, and its instances no heartbeat
    (0007): their episodes are those with muscle actions."""
    with sqlite3.connect(interrupted_store.removeprefix("sqlite:///")) as conn:
        conn.execute("delete from episodes")
        conn.execute("update experiment_run_instances set heartbeat_at = null")

    listed = json.loads(invoke(interrupted_store, ["list", "--format", "json"]).stdout)
    assert (listed[0]["episodes_done"], listed[0]["episodes"]) == (5, 20)
    rewards = invoke(interrupted_store, ["results", "run-i", "--table", "episode_rewards"])
    assert len(rewards.stdout.splitlines()) == 1 + 5


def rows_ids(uri: str) -> dict[str, int]:
    """The ids of ``run-i``'s instance and of its phase 0's attacker."""
    with sqlite3.connect(uri.removeprefix("sqlite:///")) as conn:
        (instance,) = conn.execute("select id from experiment_run_instances").fetchone()
        (agent,) = conn.execute("select id from agents where name = 'attacker'").fetchone()
    return {"instance": instance, "attacker": agent}


@pytest.mark.parametrize("tty", [False, True])
def test_show_of_a_run_without_episodes_prints_empty_tables(tmp_path: Path, tty: bool) -> None:
    """A run that failed as its agents were set up: phases and agents but no episode (piped,
    the rewards table without rows failed with a TypeError traceback)."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    failed_run(uri, "run-f", "setup")

    result = invoke(uri, ["experiment-show", "run-f"], tty=tty)

    assert result.exit_code == 0, result.output
    rewards = strip_ansi(result.stdout).split("Episode rewards", 1)[1].splitlines()
    assert rewards[1].split() == ["phase", "agent", "episodes", "mean", "min", "max", "trend"]
    assert not "".join(rewards[3:]).strip()  # no rows


LONG_BRAIN = "palaestra_examples.frozen_lake_tabular_q_learning:TabularQLearningBrain"


def test_list_and_show_give_episodes_done_of_planned_after_an_interruption(
    interrupted_store: str,
) -> None:
    listed = invoke(interrupted_store, ["list"])
    assert listed.stdout.splitlines()[2].split()[:4] == [
        "run-i", "e", "0f1e2d3c-aaaa-bbbb-cccc-000000000001", "5/20",
    ]  # fmt: skip
    as_json = json.loads(invoke(interrupted_store, ["list", "--format", "json"]).stdout)
    assert (as_json[0]["episodes_done"], as_json[0]["episodes"]) == (5, 20)

    shown = invoke(interrupted_store, ["experiment-show", "run-i", "--instance", "0f1e2d3c"])
    assert shown.exit_code == 0, shown.stderr
    phases = shown.stdout.split("Phases", 1)[1].splitlines()[3]
    assert phases.split()[:6] == ["0", "learn", "train", "2", "5/20", "cancelled"]
    rewards = shown.stdout.split("Episode rewards", 1)[1].splitlines()[3]
    # 3 steps of 41,600: 124,800 an episode, not 1.248e+05
    assert rewards.split()[:7] == ["0", "learn", "attacker", "5", "124,800", "124,800", "124,800"]
    assert rewards.split()[7] == "▄" * 5  # the trend: five equal episodes


def test_show_on_a_narrow_terminal_keeps_class_names_whole_and_colours_the_status(
    interrupted_store: str,
) -> None:
    env_columns = "100"  # the class name fits, beside it not all that is loaded from
    result = cli_runner(
        {
            "PALAESTRA_STORE_URI": interrupted_store,
            "COLUMNS": env_columns,
            "TTY_COMPATIBLE": "1",
            "FORCE_COLOR": None,
            "NO_COLOR": None,
        }
    ).invoke(cli, ["experiment-show", "run-i"], prog_name="palaestra")
    assert result.exit_code == 0, result.stderr
    assert "\x1b[33mcancelled" in result.stdout
    out = strip_ansi(result.stdout)
    assert LONG_BRAIN in out  # on one line
    assert all(len(line) <= 100 for line in out.splitlines())
    assert "an-earlier-run-with-a-long-uid attacker phase 1" not in out  # folded instead


def played(
    writer: StoreWriter,
    ids: dict[str, int],
    episodes: range,
    agents: tuple[str, ...] = ("attacker", "defender"),
) -> None:
    """``episodes`` of worker 0, 3 steps each, played whole: their step rows (the last done)
    and their ``episodes`` rows, attacker's reward 1 a step."""
    states = [m.WorldStateRow(e, s, {}, {}, {}, s == 3) for e in episodes for s in range(1, 4)]
    writer.accept(world_message(ids["environment:myenv"], 0, states))
    for agent in agents:
        actions = [
            m.MuscleActionRow(e, s, {}, {}, {}, 1.0, s == 2) for e in episodes for s in range(3)
        ]
        writer.accept(actions_message(ids[f"agent:{agent}"], 0, actions))
    ended = [
        m.EpisodeEnded(phase=0, worker=0, episode=e, started_at=1.0, ended_at=2.0, steps=3)
        for e in episodes
    ]
    writer.accept(m.Rows(table="episodes", rows=[episode_values(ids["phase"], r) for r in ended]))


@pytest.fixture
def resumed_store(tmp_path: Path) -> str:
    """``run-r``: instance ``r1`` played episode 0 of phase 0's 3 and was cancelled; ``r2``,
    which resumed it, played episodes 1 and 2 and finished."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        first = request(writer, run_start("run-r", "r1", "e")).ids["instance"]
        ids = request(writer, phase_start(first, 0, "learn", "train", 1, 3)).ids
        played(writer, ids, range(1))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="cancelled"))
        request(writer, m.StoreRunEnd(instance_id=first, status="cancelled", reason="SIGINT"))
        start = msgspec.structs.replace(run_start("run-r", "r2", "e"), resumed_from_id=first)
        second = request(writer, start).ids["instance"]
        phase = phase_start(second, 0, "learn", "train", 1, 3)
        phase = msgspec.structs.replace(phase, config=phase.config | {"first_episode": 1})
        ids = request(writer, phase).ids
        played(writer, ids, range(1, 3))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=second, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_show_of_a_resumed_run_counts_the_episodes_its_view_shows(resumed_store: str) -> None:
    as_json = ["experiment-show", "run-r", "--format", "json"]
    shown = json.loads(invoke(resumed_store, as_json).stdout)

    assert [row["episodes"] for row in shown["rewards"]] == [3, 3]  # r1's episode 0 and r2's
    assert shown["phases"][0]["episodes_done"] == 3  # not 2, r2's own, of 3 for a finished run
    text = invoke(resumed_store, ["experiment-show", "run-r"]).stdout
    assert text.split("Phases", 1)[1].splitlines()[3].split()[:6] == [
        "0", "learn", "train", "1", "3/3", "finished",
    ]  # fmt: skip
    own = json.loads(invoke(resumed_store, [*as_json, "--instance", "r2"]).stdout)
    assert own["phases"][0]["episodes_done"] == 2  # the instance named: its own episodes
    assert [row["episodes"] for row in own["rewards"]] == [2, 2]


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
    # all None: CSV reads them back as NaN
    unsaid = {"terminated": float, "truncated": float, "stale_policy": float}
    assert_frame_equal(decoded(pd.read_csv(out)), expected.astype(unsaid))


@pytest.mark.parametrize("option", ["--episode", "--worker"])
def test_results_filtered_by_an_integer_beyond_64_bits_is_no_row_not_a_traceback(
    store: str, option: str
) -> None:
    result = invoke(store, ["results", RUN, option, str(2**70)])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("phase,") and len(result.stdout.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--phase", "2"], "run 'run-q' has no phase 2; its phases: 0 (learn), 1 (check)"),
        (["--phase", str(2**70)], f"run 'run-q' has no phase {2**70}"),
        (["--phase", "0", "--phase", "chek"], "has no phase 'chek'"),
        (["--agent", "atacker"], "has no agent 'atacker'; its agents: attacker, defender"),
        (["--mode", "tset"], "has no mode 'tset'; its modes: train, test. Did you mean 'test'?"),
        (["--table", "world_states", "--environment", "env"], "has no environment 'env'"),
    ],
)
def test_results_filtered_by_a_phase_agent_mode_or_environment_the_run_lacks_is_exit_2(
    store: str, args: list[str], message: str
) -> None:
    """A typo was an empty table, exit 0 (``plot`` refused it)."""
    result = invoke(store, ["results", RUN, *args])

    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stdout == ""


def test_a_phase_name_that_names_two_phases_is_refused_for_its_index(tmp_path: Path) -> None:
    """A run file may name two phases alike: ``--phase learn`` read both as one."""
    uri = f"sqlite:///{tmp_path}/palaestra.db"
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("twice", "t1", "exp-t")).ids["instance"]
        for index in range(2):
            record_phase(writer, instance, index, "learn", "train", (1, 1))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())

    result = invoke(uri, ["results", "twice", "--phase", "learn"])

    assert result.exit_code == 2, result.output
    assert "run 'twice' has 2 phases named 'learn' (0, 1): give the index" in result.stderr
    assert invoke(uri, ["results", "twice", "--phase", "1"]).exit_code == 0
    plotted = invoke(uri, ["plot", "twice", "--phase", "learn", "-o", str(tmp_path / "c.png")])
    assert "phases named 'learn'" in plotted.stderr and plotted.exit_code == 2


def test_results_of_an_instance_named_by_the_start_of_its_uid(
    interrupted_store: str,
) -> None:
    """``list`` on a terminal shows 8 characters of an instance's uid; ``experiment-show``
    took them, ``results`` said the run had no such instance."""
    args = ["results", "run-i", "--table", "episode_rewards", "--instance"]
    result = invoke(interrupted_store, [*args, "0f1e2d3c"])

    assert result.exit_code == 0, result.stderr
    assert result.stdout == invoke(interrupted_store, args[:-1]).stdout
    wrong = invoke(interrupted_store, [*args, "0f1e2d3d"])
    assert wrong.exit_code == 2 and "has no instance '0f1e2d3d'" in wrong.stderr


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
    expected = rows.expanded(rows.muscle_actions(RUN, phase=1, store_uri=store))
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
        (["-o", "rows.xlsx"], "-o rows.xlsx: results writes .csv, .json, .parquet, not .xlsx"),
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


def test_clean_refuses_a_run_whose_older_instance_is_still_running(own_store: str) -> None:
    """The run file started twice: the second instance finished, the first still runs;
    deleting the run deleted the rows the first was writing, failing it (IntegrityError)."""
    with sqlite3.connect(own_store.removeprefix("sqlite:///")) as conn:
        conn.execute("update experiment_run_instances set status = 'running' where uid = 'old'")
    result = invoke(own_store, ["clean", RUN, "--yes"])

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: run '{RUN}' is still running (instance old, on")
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


def test_clean_removes_the_dump_files_of_its_stores_instances_only(
    own_store: str, tmp_path: Path
) -> None:
    """Two stores (a trial SQLite file and the PostgreSQL one, say) with runs of the same uid
    in one data path: cleaning the run in one store removes its instances' dump files, not
    those of the other store's instances; the run's directory goes when it is left empty."""
    data = tmp_path / "data"
    run_dir = data / "brain_dumps" / RUN
    for instance in ("old", "new", "elsewhere"):  # (elsewhere: the other store's instance)
        phase = run_dir / instance / "0-learn"
        phase.mkdir(parents=True)
        (phase / "attacker.bin").write_bytes(b"dump")

    result = invoke(own_store, ["clean", RUN, "--yes"], data_path=data)

    assert result.exit_code == 0, result.output
    assert f"and from the disk: 2 dump files in {run_dir}" in result.stdout
    assert f"Deleted run '{RUN}' (" in result.stdout and "and 2 dump files)" in result.stdout
    assert sorted(p.name for p in run_dir.iterdir()) == ["elsewhere"]
    assert (run_dir / "elsewhere" / "0-learn" / "attacker.bin").read_bytes() == b"dump"
    (run_dir.parent / "run-q2" / "q2").mkdir(parents=True)
    (run_dir.parent / "run-q2" / "q2" / "b.bin").write_bytes(b"")
    result = invoke(own_store, ["clean", "run-q2", "--yes", "--force"], data_path=data)
    assert result.exit_code == 0, result.output
    assert not (run_dir.parent / "run-q2").exists()  # (its last instance's: it goes)


def test_clean_removes_dump_files_where_the_store_recorded_them(
    own_store: str, tmp_path: Path
) -> None:
    """A run started in another directory (or with another ``data_path``) wrote its dumps
    below that one: ``clean`` looked only below its own data path and left them behind without
    a word. It also looks below the data path of each dump file the store recorded."""
    started = tmp_path / "project" / "_outputs"
    run_dir = started / "brain_dumps" / RUN
    for instance in ("old", "new", "elsewhere"):
        (run_dir / instance / "0-learn").mkdir(parents=True)
        (run_dir / instance / "0-learn" / "attacker.bin").write_bytes(b"dump")
    with sqlite3.connect(own_store.removeprefix("sqlite:///")) as conn:
        conn.execute(
            "update brain_states set path = ? where path = 'attacker.bin'",
            (str(run_dir / "new" / "0-learn" / "attacker.bin"),),
        )

    result = invoke(own_store, ["clean", RUN, "--yes"], data_path=tmp_path / "here")

    assert result.exit_code == 0, result.output
    assert f"and from the disk: 2 dump files in {run_dir}" in result.stdout
    assert "and 2 dump files)" in result.stdout
    assert sorted(p.name for p in run_dir.iterdir()) == ["elsewhere"]


def test_clean_needs_a_run(own_store: str) -> None:
    assert invoke(own_store, ["clean"]).exit_code == 2


def test_a_file_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """``results -o`` and ``plot -o`` write through ``written_whole``: a disk that fills
    half-way left a truncated file (and an older one was lost); now neither happens."""
    import errno
    import os

    from palaestra.cli.common import written_whole

    out = tmp_path / "rows.csv"
    out.write_text("older\n")
    with pytest.raises(OSError), written_whole(out) as partial:
        assert partial.parent == tmp_path and partial.suffix == ".csv"  # (it names a format)
        partial.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert out.read_text() == "older\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]

    link = tmp_path / "link.csv"
    link.symlink_to(out)
    with written_whole(link) as partial:
        partial.write_text("newer\n")
    assert link.is_symlink() and out.read_text() == "newer\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "rows.csv"]

    with written_whole(Path(os.devnull)) as partial:  # (no regular file: written itself)
        assert partial == Path(os.devnull)


def test_results_of_a_per_step_table_are_written_as_read_in_flat_memory(tmp_path: Path) -> None:
    """A long run has millions of per-step rows: ``results`` writes them as it reads them
    (the run's rows held whole took about 2 KB each), the same bytes as the query's rows."""
    uri = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    with sqlite3.connect(tmp_path / "palaestra.db") as conn:
        (agent_id,) = conn.execute(
            "select a.id from agents a join experiment_run_phases p on "
            "a.experiment_run_phase_id = p.id join experiment_run_instances i on "
            "p.experiment_run_instance_id = i.id where i.uid = 'new' and p.\"index\" = 1 "
            "and a.name = 'attacker'"
        ).fetchone()
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        for worker in range(2, 6):  # 4 x 1,000 episodes of 3 steps
            writer.accept(action_rows(agent_id, "attacker", worker, 1000))
    finally:
        asyncio.run(writer.teardown())
    out = tmp_path / "actions.csv"
    args = ["results", RUN, "--phase", "check", "--agent", "attacker", "-o", str(out)]
    tracemalloc.start()
    try:
        result = invoke(uri, args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert result.exit_code == 0, result.output
    assert "Wrote 12003 rows of muscle_actions" in result.stderr
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MiB for 12,003 rows"
    expected = rows.muscle_actions(RUN, phase="check", agent="attacker", store_uri=uri)
    again = io.StringIO()
    write_csv(expected, again)
    assert out.read_text() == again.getvalue()
    piped = invoke(uri, [*args[:-2], "--format", "json"])
    assert json.loads(piped.stdout) == plain(expected)
