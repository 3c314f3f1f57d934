"""``export_mlflow`` (palaestra/report/mlflow.py) on stores written by the StoreWriter, into a
file-based MLflow tracking store (``MLFLOW_ALLOW_FILE_STORE``; no server, no migrations)."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from palaestra.core.wire import messages as m
from palaestra.report.mlflow import distinct_keys, export_mlflow
from palaestra.store.writer import StoreWriter
from tests.conftest import mlflows_logging_kept
from tests.unit.test_store_query import (
    RUN,
    action_rows,
    phase_agent,
    phase_start,
    request,
    run_start,
    write_store,
)

if importlib.util.find_spec("mlflow") is None:  # (not imported here: see the fixture)
    pytest.skip("needs mlflow: pip install 'palaestra[mlflow]'", allow_module_level=True)


@pytest.fixture(autouse=True)
def mlflows_logging_undone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """mlflow is imported in the tests, not at collection (see mlflows_logging_kept)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    with mlflows_logging_kept():
        yield


def test_an_instance_that_ended_in_error_is_a_failed_mlflow_run(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")  # run-q: old (error), new
    tracking = (tmp_path / "mlruns").as_uri()

    exported = export_mlflow(RUN, tracking, store_uri=store)

    client = MlflowClient(tracking_uri=tracking)
    status = {one.instance: client.get_run(one.run_id).info.status for one in exported}
    assert status == {"old": "FAILED", "new": "FINISHED"}  # not RUNNING for ever


def named_store(uri: str, agents: tuple[str, ...]) -> str:
    """Run ``named`` (finished): one phase of ``agents``, one episode of 3 steps, the
    rewards of the agents ``k``-th of ``agents`` ``k + 1`` a step."""
    writer = StoreWriter("store", uri)
    writer.open()
    try:
        instance = request(writer, run_start("named", "i", "e")).ids["instance"]
        start = phase_start(instance, 0, "learn", "train", 1, 1)
        start = msgspec.structs.replace(start, agents=[phase_agent(name) for name in agents])
        ids = request(writer, start).ids
        for k, name in enumerate(agents):
            writer.accept(action_rows(ids[f"agent:{name}"], name, 0, 1, {"r": k + 1.0}))
        request(writer, m.StorePhaseEnd(phase_id=ids["phase"], status="finished"))
        request(writer, m.StoreRunEnd(instance_id=instance, status="finished"))
    finally:
        asyncio.run(writer.teardown())
    return uri


def test_agents_whose_names_differ_keep_metrics_and_params_of_their_own(
    tmp_path: Path,
) -> None:
    from mlflow.tracking import MlflowClient

    agents = ("α", "β", "a(b", "a[b")  # letters of any script are MLflow's too; ( and [ not
    store = named_store(f"sqlite:///{tmp_path}/palaestra.db", agents)
    tracking = (tmp_path / "mlruns").as_uri()

    (exported,) = export_mlflow("named", tracking, store_uri=store)

    data = MlflowClient(tracking_uri=tracking).get_run(exported.run_id).data
    assert exported.metrics == 4
    assert (data.metrics["reward/α"], data.metrics["reward/β"]) == (3.0, 6.0)  # 3 steps
    assert (data.params["agent.α.brain"], data.params["agent.β.brain"]) == ("pkg:Brain",) * 2
    told_apart = {k: v for k, v in data.metrics.items() if k.startswith("reward/a_b-")}
    assert sorted(told_apart.values()) == [9.0, 12.0]
    assert len([k for k in data.params if k.startswith("agent.")]) == 3 * len(agents)


def test_distinct_keys_change_only_what_mlflow_refuses_or_would_share() -> None:
    keys = distinct_keys(["reward/a b", "reward/a_b", "reward/a(b", "reward/日本", "x:y"])

    assert keys["reward/a b"] == "reward/a b"
    assert keys["reward/a_b"] == "reward/a_b"  # as it was: the changed one gets the hash
    assert keys["reward/a(b"].startswith("reward/a_b-") and len(keys["reward/a(b"]) == 19
    assert keys["reward/日本"] == "reward/日本"
    assert keys["x:y"] == "x_y"


def test_an_instance_still_running_is_not_exported_until_it_has_ended(tmp_path: Path) -> None:
    """Exported while it ran, it stayed a partial MLflow run, RUNNING, that every export
    after the run's end skipped as exported before."""
    from mlflow.tracking import MlflowClient

    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    database = store.removeprefix("sqlite:///")
    with sqlite3.connect(database) as conn:  # run-q2's q2: running, its heartbeat fresh
        conn.execute(
            "update experiment_run_instances set heartbeat_at = ? where uid = 'q2'",
            (dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(sep=" "),),
        )
    tracking = (tmp_path / "mlruns").as_uri()

    (running,) = export_mlflow("run-q2", tracking, store_uri=store)

    assert running.running and not running.run_id
    client = MlflowClient(tracking_uri=tracking)
    assert client.search_runs([client.get_experiment_by_name("exp-q").experiment_id]) == []

    with sqlite3.connect(database) as conn:
        conn.execute("update experiment_run_instances set status = 'finished' where uid = 'q2'")
    (ended,) = export_mlflow("run-q2", tracking, store_uri=store)

    assert not ended.running and not ended.existed
    assert client.get_run(ended.run_id).info.status == "FINISHED"


def test_a_tracking_store_whose_directory_cannot_be_made_is_named(tmp_path: Path) -> None:
    """``--tracking-uri sqlite:///<a file>/mlflow.db``: MLflow cannot make the directory of its
    database; the export failed with a bare ``FileExistsError`` traceback (exit 1)."""
    from palaestra.core.errors import InvalidInputError

    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")
    blocking = tmp_path / "a-file"
    blocking.write_text("")
    tracking = f"sqlite:///{blocking}/mlflow.db"

    with pytest.raises(InvalidInputError) as raised:
        export_mlflow(RUN, tracking, store_uri=store)

    assert str(raised.value).startswith(f"--tracking-uri {tracking}: MLflow: ")
    assert "File exists" in str(raised.value) and raised.value.exit_code == 2
    assert blocking.read_text() == ""


def test_a_refused_tracking_uri_is_named_without_its_password(tmp_path: Path) -> None:
    """MLflow's refusal and the message around it showed the tracking URI whole, its password
    too (exit 2)."""
    from palaestra.core.errors import InvalidInputError

    store = write_store(f"sqlite:///{tmp_path}/palaestra.db")

    with pytest.raises(InvalidInputError) as raised:
        export_mlflow(RUN, "bogus://me:secret@127.0.0.1:1/db", store_uri=store)

    said = str(raised.value)
    assert said.startswith("--tracking-uri bogus://me:***@127.0.0.1:1/db: MLflow: ")
    assert "secret" not in said
