"""Run files whose names, seeds or YAML aliases would break a run: refused at load with exit 2
and a message naming the file, line and key, or run safely to the end.

Names become file names, process titles, ZMQ identities and socket paths; seeds go into a
64-bit store column; aliases expand while the run file is checked.
"""

from __future__ import annotations

import json
import re
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import Workspace, slow_after
from tests.system.test_resume import BESIDE

pytestmark = pytest.mark.timeout(120)

RULE = "1 to 128 bytes of UTF-8"
SEED_MAX = 2**63 - 1


def files_outside(root: Path, data: Path) -> list[Path]:
    """Every dump file under ``root`` that is not under ``data``."""
    return [p for p in root.rglob("*.bin") if not p.is_relative_to(data)]


def config(ws: Workspace, store_uri: str) -> str:
    path = ws.path / "runtime.yaml"
    path.write_text(f"store_uri: {store_uri}\n")
    return str(path)


def rows(store_uri: str, sql: str) -> list[tuple]:
    engine = create_engine(store_uri)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]
    finally:
        engine.dispose()


# --- names -------------------------------------------------------------------------------


def test_an_agent_named_like_a_path_is_refused_before_anything_runs(
    workspace: Workspace,
) -> None:
    """It used to write its brain dump outside ``data_path`` (here: the workspace itself)."""
    run_file = workspace.variant("dummy_run.yml", ("name: attacker", "name: ../../../../../evil"))

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{run_file}:21: schedule[0].phase_0.agents[1].name: " in result.stderr
    assert "cannot be used as a name: it contains '/'." in result.stderr
    assert RULE in result.stderr and "Traceback" not in result.stderr
    assert not list(workspace.path.rglob("*.bin"))
    assert (
        not workspace.store.exists()
        or not sqlite3.connect(workspace.store)
        .execute("select count(*) from experiment_run_instances")
        .fetchone()[0]
    )


def test_a_dump_tag_like_a_path_stays_in_the_dump_directory(workspace: Workspace) -> None:
    run_file = workspace.variant(
        "dummy_run.yml",
        (
            "        - name: attacker\n          brain: {name: palaestra.agent.dummy_brain:"
            "DummyBrain, params: {}}",
            "        - name: attacker\n          brain: {name: dump_tags:TaggingBrain, "
            "params: {tag: ../../../../../../evil}}",
        ),
    )

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 0, result.stderr[-2000:]
    data = workspace.path / "_outputs"
    assert files_outside(workspace.path, data) == []
    tagged = sorted(p.relative_to(data).parts[-2:] for p in data.rglob("attacker-*.bin"))
    assert [phase for phase, _ in tagged] == ["0-phase_0", "1-phase_1"]
    assert all(name.startswith("attacker-_.._.._") and "~" in name for _, name in tagged)


@pytest.mark.parametrize("store", ["sqlite", "none"])
def test_palaestrai_style_names_run_and_their_dumps_carry_over(
    workspace: Workspace, store: str
) -> None:
    """Spaces, commas and parentheses in names (as in palaestrAI's run files) are fine: the
    paths are built from safe parts, and phase 1 finds phase 0's dump (also without a store,
    among the files)."""
    agent = "Sauron SAC (autocurriculum-training)"
    run_file = workspace.variant(
        "dummy_run.yml",
        ("uid: dummy-run", 'uid: "Yo-ho, a dummy experiment run for me!"'),
        ("name: defender", f"name: {agent}"),
        ("phase_0:", '"Training without Filters":'),
    )
    uri = workspace.store_uri if store == "sqlite" else "none"

    result = workspace.run("-v", "-c", config(workspace, uri), "start", str(run_file))

    assert result.returncode == 0, result.stderr[-2000:]
    data = workspace.path / "_outputs"
    assert files_outside(workspace.path, data) == []
    dumps = sorted(data.rglob("Sauron_SAC_autocurriculum-training_~*.bin"))
    assert len(dumps) == 2
    assert json.loads(dumps[-1].read_bytes())["thinking_calls"] == 22  # continued
    assert f"Brain-{agent} started from a brain dump" in result.stderr


def test_names_of_128_bytes_run_with_two_workers(workspace: Workspace) -> None:
    """The longest names still make valid process titles, ZMQ identities and socket paths."""
    agent = "\u00e4" * 64  # 128 bytes of UTF-8
    env = "e" * 128
    run_file = workspace.variant("multiworker_run.yml", ("name: learner", f"name: {agent}"))
    run_file.write_text(run_file.read_text().replace("myenv", env))

    result = workspace.run("experiment-start", str(run_file))

    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(workspace.store) as conn:
        (count,) = conn.execute(
            "select count(*) from muscle_actions join agents on agents.id = agent_id "
            "where agents.name = ?",
            (agent,),
        ).fetchone()
    assert count > 0
    assert workspace.instance_status()[0] == "finished"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("x" * 250, "it is 250 bytes long"),  # used to wait 60 s, then 'did not start'
        ("a\\0b", "it contains the control character '\\x00'"),  # used to be exit 1
    ],
)
def test_names_no_process_could_carry_are_refused_at_once(
    workspace: Workspace, name: str, problem: str
) -> None:
    run_file = workspace.variant("dummy_run.yml", ("name: attacker", f'name: "{name}"'))

    result = workspace.run("experiment-start", str(run_file), timeout=30)

    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{run_file}:21: schedule[0].phase_0.agents[1].name: " in result.stderr
    assert f"cannot be used as a name: {problem}." in result.stderr
    assert "Traceback" not in result.stderr


# --- seeds -------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request: pytest.FixtureRequest, workspace: Workspace) -> str:
    if request.param == "sqlite":
        return workspace.store_uri
    uri: str = request.getfixturevalue("pg_uri")
    return uri


@pytest.mark.parametrize("seed", slow_after([SEED_MAX, 2**31]))  # (2^31: also above int32)
def test_the_largest_seeds_are_kept(workspace: Workspace, store_uri: str, seed: int) -> None:
    """``2^31`` used to fail on PostgreSQL with exit 1 and no instance row."""
    run_file = workspace.variant("dummy_run.yml", ("seed: 42", f"seed: {seed}"))

    result = workspace.run("-c", config(workspace, store_uri), "start", str(run_file))

    assert result.returncode == 0, result.stderr[-2000:]
    assert rows(store_uri, "select seed from experiment_runs") == [(seed,)]
    assert rows(store_uri, "select status from experiment_run_instances") == [("finished",)]
    for (seeds,) in rows(store_uri, "select seeds from agents"):
        found = json.loads(seeds) if isinstance(seeds, str) else seeds
        assert all(0 <= s < 2**32 for s in [found["brain"], *found["muscles"]])


@pytest.mark.parametrize("command", ["experiment-start", "experiment-check-syntax"])
def test_a_seed_beyond_the_store_is_refused_at_load(workspace: Workspace, command: str) -> None:
    """``2^63`` used to pass the check, then fail the run with exit 1 and no instance row."""
    run_file = workspace.variant("dummy_run.yml", ("seed: 42", f"seed: {2**63}"))

    result = workspace.run(command, str(run_file))

    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{run_file}:5: seed: expected an integer <= {SEED_MAX} (2^63 - 1" in result.stderr
    assert not workspace.store.exists()


# --- YAML aliases ------------------------------------------------------------------------

ADDRESS_SPACE = 1 << 30  # 1 GiB: the check needs far less; the bomb used to need it all


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_a_billion_laughs_is_refused_in_bounded_time_and_memory(workspace: Workspace) -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    bomb = "".join(f"              {level}\n" for level in levels)
    run_file = workspace.variant(
        "dummy_run.yml",
        ("            params: {discrete: true, max_iter: 10}\n", f"            params:\n{bomb}"),
    )
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "experiment-check-syntax", str(run_file)],
        cwd=workspace.path,
        env=workspace.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=limit_memory,
    )
    workspace.sessions.add(proc.pid)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the check did not end in 30 s: {err[-2000:]}")

    assert proc.returncode == 2, err[-2000:]
    assert f"{run_file}:19: schedule[0].phase_0.environments[0].environment.params.f[0]: " in err
    assert "YAML aliases expand to more than 100,000 values" in err
    assert "Traceback" not in err
    assert time.monotonic() - began < 30


DUMMY_RUN = Path(__file__).parents[2] / "experiments" / "dummy_run.yml"


def palaestra_in(
    place: Path, workspace: Workspace, *args: str | bytes
) -> subprocess.CompletedProcess[str]:
    """``palaestra *args`` run in ``place`` (its output read as text, bytes that are no UTF-8
    escaped)."""
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=place,
        env=workspace.env(),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=60,
    )


def test_a_run_file_whose_name_is_no_utf8_is_read_or_refused_cleanly(workspace: Workspace) -> None:
    """A command line with bytes that are no UTF-8 (a file's name) failed every command at its
    start with a bare ``UnicodeDecodeError`` traceback (exit 1), reading the process's title."""
    missing = palaestra_in(workspace.path, workspace, "check", b"gone-\xff.yml")
    assert missing.returncode == 2, missing.stderr[-2000:]
    assert "gone-\\udcff.yml: cannot read the run file" in missing.stderr
    assert "Traceback" not in missing.stderr
    (workspace.path / "run-\udcff.yml").write_bytes(DUMMY_RUN.read_bytes())
    checked = palaestra_in(workspace.path, workspace, "check", b"run-\xff.yml")
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_a_store_in_a_directory_whose_name_is_no_utf8_is_written_and_read(
    workspace: Workspace,
) -> None:
    """The store writer failed the run (exit 3: "Could not decode to UTF-8 column 'file'",
    SQLite's own name of its file) and every reader with a bare ``UnicodeEncodeError`` (the
    read-only connection's URI) in such a directory."""
    place = workspace.path / "d\udcff"
    place.mkdir()
    (place / "run.yml").write_bytes(DUMMY_RUN.read_bytes())
    started = palaestra_in(place, workspace, "experiment-start", "-q", "run.yml")
    assert started.returncode == 0, started.stderr[-2000:]
    listed = palaestra_in(place, workspace, "experiment-list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "dummy-run" in listed.stdout and "finished" in listed.stdout


@pytest.mark.slow  # (texts.path_on_disk's unit test: tests/unit/test_texts.py)
def test_a_run_in_a_directory_whose_name_is_no_utf8_resumes_and_cleans_from_elsewhere(
    workspace: Workspace, tmp_path: Path
) -> None:
    """The store keeps the run file's path with each lone surrogate as its escape (``\\udcff``),
    which names no directory: ``experiment-resume`` from another directory did not find the
    plug-ins beside the run file (exit 2, "no module 'beside'"), and ``clean`` left the dump
    files there (exit 0). Both read the escape back where the store's path names nothing on
    the disk; a directory that has those six characters in its name is found as it is."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    flag = tmp_path / "fail"
    for k, name in enumerate(["project-\udcff", "project-\\udcff"]):  # (bytes 0xff; a backslash)
        place = workspace.path / name
        place.mkdir()
        (place / "run.yml").write_text(BESIDE.replace("FLAG", str(flag)))
        (place / "beside.py").write_text(
            "from resume_plugins import FailOnceMuscle as BesideMuscle\n"
        )
        config = tmp_path / f"runtime-{k}.yml"
        config.write_text(f"store_uri: sqlite:///{tmp_path / f'store-{k}.db'}\n")
        flag.touch()
        failed = palaestra_in(place, workspace, "-c", str(config), "experiment-start", "run.yml")
        assert failed.returncode == 1, failed.stderr[-2000:]
        assert "failing once" in failed.stderr
        flag.unlink()

        resumed = palaestra_in(
            elsewhere, workspace, "-c", str(config), "experiment-resume", "beside-run"
        )
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        # (episode 1 where episode 0's Brain dump reached the store before the failure; else
        # the resume moves back to episode 0, as documented: a loaded CI machine did so once)
        assert re.search(r"at phase 0, episode [01]\.", resumed.stderr), resumed.stderr[-2000:]

        dumps = place / "_outputs" / "brain_dumps" / "beside-run"
        assert [p for p in dumps.rglob("*") if p.is_file()], name
        cleaned = palaestra_in(
            elsewhere, workspace, "-c", str(config), "clean", "beside-run", "--yes"
        )
        assert cleaned.returncode == 0, cleaned.stderr[-2000:]
        # the resumed instance's beside the elsewhere's data path, the first's in the place
        assert cleaned.stdout.count("and from the disk: 1 dump file in") == 2, cleaned.stdout
        assert not dumps.exists(), name
