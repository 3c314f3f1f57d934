"""The command's entry point (palaestra/cli/entry.py): OpenBLAS's wait set before numpy loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from palaestra.cli.entry import quiet_blas


def test_openblas_threads_sleep_at_once_unless_the_user_said_how_long() -> None:
    environ: dict[str, str] = {"PATH": "/bin"}
    quiet_blas(environ)
    assert environ == {"PATH": "/bin", "OPENBLAS_THREAD_TIMEOUT": "4"}
    for name in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"):  # the user's is kept
        environ = {name: "20"}
        quiet_blas(environ)
        assert environ == {name: "20"}


@pytest.mark.timeout(30)
def test_the_entry_point_loads_no_numpy_before_it_sets_the_wait() -> None:
    """(OpenBLAS reads the variable as numpy loads it: ``main`` sets it first thing.)"""
    code = "import sys, palaestra.cli.entry; print(sorted(m for m in sys.modules if 'numpy' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
