"""The executor stays light: every process of a run is forked from it, so whatever it imports
is in every process's memory and in every start's time."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "pandas", "pyarrow", "torch")

SCRIPT = f"""
import sys
import palaestra.cli.main
from palaestra.core.processes import preload
from palaestra.experiment.executor import PRELOAD
preload(PRELOAD)
print(",".join(m for m in {HEAVY!r} if m in sys.modules))
"""


def test_the_executor_imports_no_store_or_analysis_library() -> None:
    """The store writer imports SQLAlchemy in its own process only (a deferred component)."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "", f"the executor imported {result.stdout.strip()}"
