"""``palaestra export mlflow`` on a real run into a local file-based MLflow tracking store,
read back with ``MlflowClient``: params from the run, every metric equal to the store's.

MLflow 3 keeps its file store in maintenance mode, usable with ``MLFLOW_ALLOW_FILE_STORE``;
it is much faster to set up than an SQLite tracking store (which runs MLflow's migrations)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Workspace, mlflows_logging_kept, wait_until_gone
from tests.system.curve_runs import (
    AGENTS,
    invoke,
    shared_curves,
    store_end_times,
    store_episodes,
    store_statistic,
)

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def mlflows_logging_undone() -> Iterator[None]:
    with mlflows_logging_kept():
        yield


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = shared_curves(tmp_path_factory)
    yield workspace
    assert not wait_until_gone(workspace.sessions)


def test_each_instance_becomes_an_mlflow_run_with_the_stores_metrics(
    curves: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    tracking = (curves.path / "mlruns").as_uri()

    result = invoke(curves, "export", "mlflow", "curve-a", "--tracking-uri", tracking)

    assert result.exit_code == 0, result.stderr
    client = MlflowClient(tracking_uri=tracking)
    experiment = client.get_experiment_by_name("curve-tests")  # the run's experiment uid
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.tags["palaestra.run_uid"] == "curve-a"
    assert run.info.status == "FINISHED"
    params = run.data.params
    assert params["seed"] == "3"
    assert params["phases"] == "train,test"
    assert (params["phase.train.workers"], params["phase.test.episodes"]) == ("2", "2")
    assert params["agent.learner.muscle"] == "curve_plugins:StatisticMuscle"
    assert params["agent.watcher.brain"] == "palaestra.agent.dummy_brain:DummyBrain"
    for agent in AGENTS:
        history = client.get_metric_history(run.info.run_id, f"reward/{agent}")
        episodes = store_episodes(curves.store, "curve-a", agent)
        assert sorted((m.step, m.value) for m in history) == [
            (index, row[5]) for index, row in enumerate(episodes)
        ]
    episodes = store_episodes(curves.store, "curve-a", "learner")
    explore = store_statistic(curves.store, "curve-a", "learner", "explore")
    history = client.get_metric_history(run.info.run_id, "statistic/explore/learner")
    assert sorted((m.step, m.value) for m in history) == [
        (index, sum(values) / len(values))
        for index, values in enumerate(explore[(p, w, e)] for p, _, w, e, _, _ in episodes)
    ]
    assert f"MLflow run {run.info.run_id}" in result.stdout
    history = client.get_metric_history(run.info.run_id, "reward/watcher")
    ended = store_end_times(curves.store, "curve-a")
    assert [m.timestamp for m in sorted(history, key=lambda m: m.step)] == [
        int(when * 1000) for when in ended
    ]

    again = invoke(
        curves, "export", "mlflow", "curve-a", "--tracking-uri", tracking, "--experiment", "other"
    )
    once_more = invoke(curves, "export", "mlflow", "curve-a", "--tracking-uri", tracking)

    assert again.exit_code == 0 and once_more.exit_code == 0
    assert "exported before" in once_more.stdout  # the instance's tag is found
    assert len(client.search_runs([experiment.experiment_id])) == 1
    other = client.get_experiment_by_name("other")
    assert len(client.search_runs([other.experiment_id])) == 1


def test_an_unusable_tracking_uri_exits_2_naming_it(curves: Workspace) -> None:
    result = invoke(curves, "export", "mlflow", "curve-a", "--tracking-uri", "nosuch://here")

    assert result.exit_code == 2, result.output
    assert "--tracking-uri nosuch://here" in result.stderr
