"""The executor stays light: every process of a run is forked from it, so whatever it imports
is in every process's memory and in every start's time."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sqlalchemy", "alembic", "pandas", "pyarrow", "torch")

SCRIPT = f"""
import sys
import palaestra.cli.main
from palaestra.core.supervision.processes import preload
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


def test_the_end_of_a_run_imports_no_store_library() -> None:
    """Where the results are is said without SQLAlchemy (0.3 s of import at every run's end)."""
    script = f"""
import sys
from palaestra.cli.common import State, where_to_look
from palaestra.experiment.runtime_config import RuntimeConfig
state = State(config_path=None, verbosity=0)
state._config = RuntimeConfig(store_uri="postgresql://u:secret@h/db")
said = where_to_look(state, "run")
assert "secret" not in said and "u:***@h" in said, said
print(",".join(m for m in {HEAVY!r} if m in sys.modules))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "", f"where_to_look imported {result.stdout.strip()}"
