"""Plug-ins that record how their process started, for the start-method tests.

Each writes one JSON line to the file ``record`` (a param) in ``setup()``: its role, pid, parent
pid, the parent's command line, :func:`multiprocessing.get_start_method` (which palaestra sets
to the run's method in a child started by forkserver or spawn) and the run's
``experiment-record`` flag file (from the environment the process started with).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from typing import Any

from palaestra.agent import DummyBrain, DummyMuscle
from palaestra.environment import DummyEnvironment


def record_start(path: str, role: str, **extra: Any) -> None:
    """Append how this process started to ``path`` (one JSON line, written at once), with
    ``extra`` items."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            parent_cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        parent_cmdline = ""
    line = json.dumps(
        {
            "role": role,
            "pid": os.getpid(),
            "ppid": parent,
            "parent_cmdline": parent_cmdline,
            "method": multiprocessing.get_start_method(allow_none=True) or "fork",
            "recording_flag": os.environ.get("PALAESTRA_RECORDING_FLAG"),
            **extra,
        }
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def read_records(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class RecordingBrain(DummyBrain):
    """A DummyBrain that records its start."""

    def __init__(self, record: str, **params: Any) -> None:
        super().__init__(**params)
        self.record = record

    def setup(self) -> None:
        super().setup()
        record_start(self.record, "brain")


class RecordingMuscle(DummyMuscle):
    """A DummyMuscle that records its start."""

    def __init__(self, record: str, **params: Any) -> None:
        super().__init__(**params)
        self.record = record

    def setup(self) -> None:
        super().setup()
        record_start(self.record, "muscle")


class RecordingEnvironment(DummyEnvironment):
    """A DummyEnvironment that records where it was constructed (also while a run file is
    checked: the probe's process), with ``fresh``: whether that process is a fresh interpreter
    rather than a fork of the test's."""

    def __init__(self, record: str, **params: Any) -> None:
        super().__init__(**params)
        record_start(record, "environment", fresh="_pytest" not in sys.modules)
