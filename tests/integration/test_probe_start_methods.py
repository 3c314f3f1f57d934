"""The environment probe (checking a run file's sensor and actuator ids) starts its process by
fork only where the runs do: otherwise (a chosen forkserver or spawn, or ``auto`` with CUDA
initialised here) it is spawned, a fresh interpreter."""

from __future__ import annotations

import os
import signal
import sys
import types
from pathlib import Path

import pytest

from palaestra.core.description.specs import EnvironmentSpec
from palaestra.core.supervision import interrupts
from palaestra.experiment.probe import EnvironmentIds
from tests.conftest import PLUGINS
from tests.plugins.start_record import read_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]


@pytest.mark.parametrize(
    ("method", "cuda", "fresh"),
    [
        ("fork", False, False),
        ("auto", False, False),
        ("auto", True, True),
        ("forkserver", False, True),
        ("spawn", False, True),
    ],
)
def test_the_probe_is_spawned_unless_runs_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, cuda: bool, fresh: bool
) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))
    if cuda:
        is_initialized = types.SimpleNamespace(is_initialized=lambda: True)
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=is_initialized))
    record = tmp_path / "probe.jsonl"
    spec = EnvironmentSpec(
        name="start_record:RecordingEnvironment",
        uid="env",
        params={"record": str(record), "discrete": True, "max_iter": 5},
    )

    ids = EnvironmentIds(timeout=20, start_method=method).of(spec)

    assert ids is not None
    assert sorted(ids["sensors"]) == [f"env.{i}" for i in range(10)]
    (probe,) = read_records(str(record))
    assert probe["fresh"] is fresh
    assert probe["ppid"] == os.getpid()  # a child of this process either way


def test_a_signal_dropped_while_the_probe_forked_stops_the_wait_and_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM that came while the command forked the probe raised in an at-fork callback,
    where Python drops the exception, and only the record was left: the command then waited
    for the hung probe for its whole probe_timeout. The probe looks at the record first and
    unwinds, killing and reaping its child."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.chdir(tmp_path)  # (where the environment marks that it hangs)
    spec = EnvironmentSpec(
        name="strays:HangOnceEnvironment",
        uid="env",
        params={"where": "init", "discrete": True, "max_iter": 5},
    )
    forked: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            forked.append(pid)
            interrupts.note(signal.SIGTERM)  # (as the dropped exception's handler did)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    try:
        with pytest.raises(interrupts.Terminated):
            EnvironmentIds(timeout=600, start_method="fork").of(spec)
    finally:
        interrupts._forget()
    (child,) = forked
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(child, os.WNOHANG)
