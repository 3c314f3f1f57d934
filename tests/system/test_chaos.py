"""benchmarks/chaos.py --quick as a slow test: every fault kind against every role once (and
stopped and killed processes of a run whose simulation controller plays the rounds).

The benchmark is run as a script (tests import nothing from benchmarks/): it starts real runs,
injects one fault into one process of each and checks exit code, status, reason, time to exit,
leftover processes and rows; it exits 0 only when every case passed. Its table is the failure's
message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICK_WITHIN = 1500  # seconds: about 2 min here, 3.5 beside the other slow tests (a hung
# case is cut off after ~37 s by the script itself)


def chaos(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``benchmarks/chaos.py`` with ``args``, episodes of 400 steps (not 1,000: each fault lands
    within the first 40 % of the run all the same, and the list takes about half as long)."""
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "chaos.py"),
            *args,
            "--answer-timeout",
            "2",
            "--max-iter",
            "400",
            "--json",
            str(tmp_path / "chaos.json"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=QUICK_WITHIN,
    )


@pytest.mark.slow
@pytest.mark.timeout(QUICK_WITHIN + 60)
def test_the_quick_chaos_list_passes(tmp_path: Path) -> None:
    done = chaos(tmp_path, "--quick")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.timeout(QUICK_WITHIN + 60)
def test_a_stopped_or_killed_process_fails_a_run_whose_controller_plays_the_rounds(
    tmp_path: Path,
) -> None:
    """The same faults with ``driver: controller`` (the controller waits on its links to the
    Muscles and the environments): a stopped or killed process of every role fails the run
    naming it, and no row of a healthy process is lost."""
    done = chaos(tmp_path, "--only", "SIGSTOP", "--only", "SIGKILL", "--driver", "controller")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}"
