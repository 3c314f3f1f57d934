"""``export_mlflow`` (palaestra/report/mlflow.py) on stores written by the StoreWriter, into a
file-based MLflow tracking store (``MLFLOW_ALLOW_FILE_STORE``; no server, no migrations)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.report.mlflow import export_mlflow
from tests.unit.test_store_query import RUN, write_store

pytest.importorskip("mlflow")

MLFLOWS_LOGGERS = ("mlflow", "alembic", "sqlalchemy.engine", "huey")
"""The loggers importing mlflow reconfigures in its process (see
tests/system/test_export_mlflow.py)."""


@pytest.fixture(autouse=True)
def mlflows_logging_undone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    saved = {
        name: (logger.handlers[:], logger.level, logger.propagate)
        for name, logger in ((n, logging.getLogger(n)) for n in MLFLOWS_LOGGERS)
    }
    yield
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers, logger.level, logger.propagate = handlers, level, propagate


def test_an_instance_that_ended_in_error_is_a_failed_mlflow_run(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")  # run-q: old (error), new
    tracking = (tmp_path / "mlruns").as_uri()

    exported = export_mlflow(RUN, tracking, store_uri=store)

    client = MlflowClient(tracking_uri=tracking)
    status = {one.instance: client.get_run(one.run_id).info.status for one in exported}
    assert status == {"old": "FAILED", "new": "FINISHED"}  # not RUNNING for ever
