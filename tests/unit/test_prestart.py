"""A child forked before its spec is known (palaestra/core/supervision/prestart.py), in this
process: one not handed over is killed when closed or when this process exits however it
exits, and only its role is handed over. The hand-over itself: tests/system/test_prestart.py."""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
from typing import Any

import msgspec
import pytest

from palaestra.core.supervision.launch import HEADER, encode_spec
from palaestra.core.supervision.prestart import Prestarted
from palaestra.core.supervision.processes import ChildSpec, Deferred
from palaestra.store.writer_spec import STORE_WRITER, WriterArgs


@pytest.mark.timeout(30)
def test_a_child_not_handed_over_is_killed_and_reaped_when_closed() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    process = early._process
    assert process is not None and process.is_alive()
    early.close()
    assert process.exitcode == -signal.SIGKILL
    assert process not in multiprocessing.active_children()
    early.close()  # (twice: nothing more)


ABANDONED = """
import sys
from palaestra.core.supervision.prestart import Prestarted
early = Prestarted("StoreWriter", "json:dumps", "prepared")
print(early._process.pid, flush=True)
if sys.argv[1] == "interrupted":
    raise KeyboardInterrupt
from palaestra.cli.entry import leave
leave(0)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["interrupted", "leaving"])
def test_a_process_that_ends_without_closing_it_ends_its_child_and_does_not_hang(how: str) -> None:
    """(multiprocessing's exit handler would wait for ever for a child waiting for its spec.)"""
    done = subprocess.run(
        [sys.executable, "-c", ABANDONED, how], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == (-signal.SIGINT if how == "interrupted" else 0), done.stderr
    pid = int(done.stdout.split()[0])
    with pytest.raises(ProcessLookupError):  # killed and reaped by the process that ended
        os.kill(pid, 0)


@pytest.mark.timeout(30)
def test_a_closed_child_is_handed_over_to_no_one() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    early.close()
    assert early.launch(_spec("StoreWriter")) is None


@pytest.mark.timeout(30)
def test_only_a_spec_of_its_role_takes_the_child() -> None:
    early = Prestarted("StoreWriter", "json:dumps", "prepared")
    try:
        assert early.launch(_spec("Brain")) is None
        assert early._process is not None  # still there for the writer
    finally:
        early.close()


class _NoArgs(msgspec.Struct):
    pass


def _spec(role: str) -> ChildSpec:
    return ChildSpec(
        name=role,
        role=role,
        component=Deferred("palaestra.store.writer:StoreWriter"),  # (never built here)
        args=_NoArgs(),
        run_dir="/nonexistent",
        parent_endpoint="ipc:///nonexistent",
    )


class _Naming(pickle.Unpickler):
    """Records the modules a pickle names (each of which its reader imports)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.modules: set[str] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.modules.add(module)
        return super().find_class(module, name)


def test_the_writers_spec_names_no_module_of_the_run() -> None:
    """The prestarted writer unpickles its spec on the run's critical path: a class of the
    executor's modules in it (as WriterArgs once was, in palaestra.experiment.experiment_run)
    makes it import the agents and numpy there, 0.1 to 0.3 s."""
    spec = ChildSpec(
        name="StoreWriter",
        role="StoreWriter",
        component=STORE_WRITER,
        args=WriterArgs(store_uri="sqlite:///x.db"),
        run_dir="/nonexistent",
        parent_endpoint="ipc:///nonexistent",
    )
    reader = _Naming(encode_spec(spec)[HEADER.size :])
    assert reader.load() == spec
    kept = {"builtins", "copyreg", "logging", "msgspec._utils"}
    assert {
        m for m in reader.modules if m not in kept and not m.startswith("palaestra.core.")
    } == {"palaestra.store.writer_spec"}
