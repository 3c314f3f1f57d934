"""Large observations do not pile up: every process of a run stays bounded in bytes, whatever
the number of steps (the Brain's and the Muscle's memories, the rows on their way to the
store)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import Workspace
from tests.system.test_rows import run_file

pytestmark = pytest.mark.timeout(180)

PEAK = """\
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "palaestra", *sys.argv[1:]])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB, the largest descendant
sys.exit(done.returncode)
"""


def largest_process_mib(workspace: Workspace, *args: str) -> float:
    """Run palaestra; the peak resident memory of its largest process, in MiB."""
    script = workspace.path / "peak.py"
    script.write_text(PEAK)
    env = workspace.env()
    env["PALAESTRA_STORE_URI"] = "none"  # only memory is measured here
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=workspace.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    workspace.sessions.add(proc.pid)
    out, err = proc.communicate(timeout=150)
    assert proc.returncode == 0, err[-3000:]
    return int(out.split()[-1]) / 1024


@pytest.mark.slow
def test_a_run_of_large_observations_stays_bounded_in_memory(workspace: Workspace) -> None:
    """120 steps of a 2.5 MB observation (12 MB as the plain lists messages carry): before
    memories were bounded in bytes, the Brain kept every step (1.4 GB), the environment and
    the Muscle each buffered every row for the store."""
    path = run_file(
        workspace,
        environment="row_probes:BigObservationEnvironment",
        environment_params=", size: 312500",
    )
    text = path.read_text().replace("max_iter: 100000", "max_iter: 120")
    path.write_text(text)

    peak = largest_process_mib(workspace, "experiment-start", str(path))

    assert peak < 700, f"a process of the run peaked at {peak:.0f} MiB"


@pytest.mark.slow
def test_memory_limits_set_in_the_run_file_bound_the_brain(workspace: Workspace) -> None:
    path = run_file(
        workspace,
        environment="row_probes:BigObservationEnvironment",
        environment_params=", size: 312500",
    )
    text = path.read_text().replace("max_iter: 100000", "max_iter: 120")
    text = text.replace(
        "          sensors: [myenv.0, myenv.1]\n",
        "          sensors: [myenv.0, myenv.1]\n"
        "          brain_memory: {rows: 100000, bytes: 32MiB}\n"
        "          muscle_memory: {rows: 2}\n",
    )
    path.write_text(text)

    peak = largest_process_mib(workspace, "experiment-start", str(path))

    assert peak < 450, f"a process of the run peaked at {peak:.0f} MiB"
