"""numpy's values in the Python API's overrides, grid, seeds and run documents
(:mod:`palaestra.experiment.api`): YAML writes Python's values only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import palaestra
from palaestra.experiment import probe
from palaestra.experiment.executor import RunOutcome
from palaestra.experiment.runtime_config import RuntimeConfig

DUMMY = Path(__file__).parents[2] / "experiments" / "dummy_run.yml"
LR = "schedule.0.phase_0.agents.0.brain.params.lr"


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """The specs the API would execute; nothing runs (no process)."""
    monkeypatch.setattr(probe, "_probe", lambda *args: None)  # (ids left to the run)
    specs: list[Any] = []

    def run_all(batch: list[Any], settings: object, **kwargs: object) -> list[RunOutcome]:
        specs.extend(batch)
        return [RunOutcome(run_uid=spec.uid, instance_uid="i", exit_code=0) for spec in batch]

    monkeypatch.setattr("palaestra.experiment.sweep.run_all", run_all)
    return specs


def config(tmp_path: Path) -> RuntimeConfig:
    return RuntimeConfig(store_uri="none", data_path=str(tmp_path / "out"))


def test_a_sweep_over_numpy_values_and_seeds(executed: list[Any], tmp_path: Path) -> None:
    """grid={lr: list(np.logspace(...))} or seeds=np.arange(...) failed with a bare
    RepresenterError ('cannot represent an object: np.float64(0.001)')."""
    palaestra.sweep(
        DUMMY, seeds=np.arange(3, 4), grid={LR: np.logspace(-3, -1, 2)}, config=config(tmp_path)
    )
    assert [spec.uid for spec in executed] == [
        "dummy-run-seed3-lr0.001",
        "dummy-run-seed3-lr0.1",
    ]
    assert [spec.seed for spec in executed] == [3, 3]


def test_a_run_with_numpy_overrides(executed: list[Any], tmp_path: Path) -> None:
    palaestra.run(DUMMY, overrides={"seed": np.int64(5)}, config=config(tmp_path))
    assert [(spec.uid, spec.seed) for spec in executed] == [("dummy-run-seed5", 5)]
