"""Watching a run from the command line: progress when piped, ``-q``, where the results are,
and ``clean`` removing the dump files it names."""

from __future__ import annotations

import contextlib
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Workspace, finish, wait_until_gone

pytestmark = pytest.mark.timeout(120)

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # everything but tab and newline
THREE_EPISODES = ("episodes: 1", "episodes: 3")


@pytest.mark.slow
def test_a_piped_run_says_where_its_results_are_and_clean_removes_its_dump_files(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant("dummy_run.yml", THREE_EPISODES)
    result = workspace.run("experiment-start", str(run_file))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert not CONTROL.search(out)
    lines = out.splitlines()
    for index, name, mode in ((0, "phase_0", "train"), (1, "phase_1", "test")):
        phase = f"phase {index} '{name}' ({mode})"
        assert f"{phase} started: 3 episodes (3 x 1 worker)" in lines
        assert [line.split(", ")[0] for line in lines if line.startswith(f"{phase}: ")] == [
            f"{phase}: 1/3 episodes",
            f"{phase}: 2/3 episodes",
        ]
        assert any(line.startswith(f"{phase} ended: 3/3 episodes, 30 steps in ") for line in lines)
    summary = lines.index("Summary of run 'dummy-run'")
    assert [line.split()[:5] for line in lines[summary + 3 : summary + 7]] == [
        ["0", "phase_0", "attacker", "3/3", "30"],
        ["0", "phase_0", "defender", "3/3", "30"],
        ["1", "phase_1", "attacker", "3/3", "30"],
        ["1", "phase_1", "defender", "3/3", "30"],
    ]
    at = lines.index(next(line for line in lines if line.startswith("Results are in the store")))
    assert lines[at].startswith(
        f"Results are in the store sqlite:///palaestra.db (the file {workspace.store}). Look "
    )
    assert lines[at + 1 :] == [
        "  palaestra experiment-show dummy-run",
        "  palaestra results dummy-run --table episode_rewards -o rewards.csv",
        "  palaestra plot dummy-run -o curve.png",
    ]
    dumps = workspace.path / "_outputs" / "brain_dumps" / "dummy-run"
    files = sorted(path for path in dumps.rglob("*") if path.is_file())
    assert files  # both phases of both agents dumped their brains

    shown = workspace.run("experiment-show", "dummy-run")
    assert shown.returncode == 0, shown.stderr
    phases = shown.stdout.split("Phases", 1)[1].splitlines()[3:5]
    assert [line.split()[4] for line in phases] == ["3/3", "3/3"]  # from the episodes table

    cleaned = workspace.run("clean", "--yes", "dummy-run")
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"and from the disk: {len(files)} dump files in _outputs/brain_dumps/dummy-run\n" in (
        cleaned.stdout.replace("./", "")
    )
    assert re.search(
        rf"Deleted run 'dummy-run' \(\d+ rows and {len(files)} dump files\)\.", cleaned.stdout
    )
    assert not dumps.exists()
    assert (workspace.path / "_outputs" / "brain_dumps").is_dir()  # other runs' dumps stay


def test_quiet_shows_no_progress_and_no_summary(workspace: Workspace) -> None:
    run_file = workspace.variant("dummy_run.yml", THREE_EPISODES)
    result = workspace.run("experiment-start", "-q", str(run_file))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("Run 'dummy-run' finished (instance ")
    assert "phase" not in result.stdout and "Summary" not in result.stdout


LOCAL_BRAIN = """
from palaestra.agent.dummy_brain import DummyBrain


class LocalBrain(DummyBrain):
    '''A Brain in a module beside the run file.'''
"""
CWD_MUSCLE = """
from palaestra.agent.dummy_muscle import DummyMuscle


class CwdMuscle(DummyMuscle):
    '''A Muscle in a module in the working directory.'''
"""


def test_plugins_beside_the_run_file_and_in_the_working_directory_need_no_pythonpath(
    workspace: Workspace,
) -> None:
    """A plug-in module beside the run file, and one in the working directory, are found;
    modules there named like the standard library's (a ``secrets.py``, a ``statistics.py``)
    hide nothing: they went first on the import path, and the run died in a later import of
    the real one (multiprocessing's of ``secrets``)."""
    experiment = workspace.path / "experiment"
    experiment.mkdir()
    (experiment / "local_brains.py").write_text(LOCAL_BRAIN)
    (workspace.path / "cwd_muscles.py").write_text(CWD_MUSCLE)
    for where, name in ((experiment, "secrets"), (workspace.path, "statistics")):
        (where / f"{name}.py").write_text(f"raise ImportError('the user\\'s {name}.py')\n")
    source = workspace.variant(
        "dummy_run.yml",
        ("palaestra.agent.dummy_brain:DummyBrain", "local_brains:LocalBrain"),
        ("palaestra.agent.dummy_muscle:DummyMuscle", "cwd_muscles:CwdMuscle"),
    )
    run_file = experiment / "run.yml"
    source.rename(run_file)
    # -P: the working directory is not on the path, as with the installed `palaestra` script
    proc = workspace.spawn(
        [sys.executable, "-P", "-m", "palaestra", "experiment-start", "-q", "experiment/run.yml"]
    )
    code, out, err = finish(proc, 100)
    assert code == 0, err[-3000:]
    assert "Run 'dummy-run' finished" in out
    with sqlite3.connect(workspace.store) as conn:
        plugins = set(conn.execute("select brain, muscle from agents where name = 'defender'"))
    assert plugins == {("local_brains:LocalBrain", "cwd_muscles:CwdMuscle")}


def test_after_ctrl_c_the_summary_and_the_list_give_episodes_done_of_planned(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant("dummy_run.yml", ("episodes: 1", "episodes: 500"))
    proc = workspace.start("experiment-start", str(run_file))
    assert proc.stdout is not None
    first = [proc.stdout.readline() for _ in range(2)]  # the phase's start, then 50 episodes
    assert first[1].startswith("phase 0 'phase_0' (train): 50/500 episodes"), first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-3000:]
    ended = re.search(r"phase 0 'phase_0' \(train\) ended: (\d+)/500 episodes", out)
    assert ended is not None, out
    assert 50 <= int(ended.group(1)) < 500
    assert "Summary of run 'dummy-run'" in out
    assert "phase 1" not in out

    listed = workspace.run("experiment-list")
    row = listed.stdout.splitlines()[2].split()
    assert row[:2] == ["dummy-run", "dummy-experiments"]
    stored_done, planned = row[3].split("/")
    assert planned == "500" and 50 <= int(stored_done) < 500
    assert any(cell.startswith("cancelled") for cell in row), row
    assert stored_done == ended.group(1)  # the console and the store agree
    assert shown_counts(workspace) == {int(stored_done)}


def stored_at_least(store: Path, proc: subprocess.Popen[str], episodes: int) -> None:
    """Poll (bounded) until the store holds ``episodes`` ended episodes of the run ``proc``
    plays; the test fails if the run ends first or they do not come within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, "the run ended before it was killed"
        with contextlib.closing(sqlite3.connect(store)) as conn:
            (count,) = conn.execute("select count(*) from episodes").fetchone()
        if count >= episodes:
            return
        assert time.monotonic() < deadline, f"{count} episodes stored after 30 s"
        time.sleep(0.05)


def shown_counts(workspace: Workspace) -> set[int]:
    """The episode counts ``experiment-show`` gives the run's phase 0 in its tables: Phases
    (``done/planned``) and Episode rewards (one per agent)."""
    shown = workspace.run("experiment-show", "dummy-run").stdout
    phases = re.search(r"^0\s+phase_0\s+train\s+\d+\s+(\d+)/\d+", shown, re.MULTILINE)
    assert phases is not None, shown
    rewards = re.findall(r"^0 phase_0 (?:attacker|defender)\s+(\d+)\s", shown, re.MULTILINE)
    assert len(rewards) == 2, shown
    return {int(phases.group(1)), *map(int, rewards)}


def test_after_sigkill_of_the_executor_the_list_and_the_show_agree(
    workspace: Workspace,
) -> None:
    run_file = workspace.variant("dummy_run.yml", ("episodes: 1", "episodes: 2000"))
    proc = workspace.start("experiment-start", str(run_file))
    assert proc.stdout is not None
    first = [proc.stdout.readline() for _ in range(2)]  # the phase's start, then progress
    # (the first progress line comes after 200 of 2,000 episodes: one tenth)
    assert re.match(r"phase 0 'phase_0' \(train\): \d+/2000 episodes", first[1]), first
    stored_at_least(workspace.store, proc, 50)  # the kill lands mid-run, with rows stored
    proc.kill()
    proc.communicate(timeout=30)
    assert wait_until_gone(workspace.sessions, 10) == []  # the writer ended with it

    listed = workspace.run("experiment-list")
    row = listed.stdout.splitlines()[2].split()
    stored_done, planned = row[3].split("/")
    assert planned == "2000" and 50 <= int(stored_done) < 2000
    assert shown_counts(workspace) == {int(stored_done)}
