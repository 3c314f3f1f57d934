"""Tests of :mod:`palaestra.experiment.api` that run nothing: statuses, store URIs, results."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.core.errors import InvalidInputError
from palaestra.experiment.api import RunResult, absolute_store_uri, status_of, sweep


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, "finished"),
        (1, "error"),
        (2, "error"),
        (3, "error"),
        (130, "cancelled"),
        (143, "cancelled"),
    ],
)
def test_exit_codes_map_to_the_stores_statuses(code: int, status: str) -> None:
    assert status_of(code) == status


def test_a_relative_sqlite_store_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_store_uri("sqlite:///runs.db") == f"sqlite:///{tmp_path / 'runs.db'}"
    assert absolute_store_uri("sqlite:///sub/runs.db") == f"sqlite:///{tmp_path}/sub/runs.db"


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:////abs/runs.db",
        "sqlite://",
        "sqlite:///:memory:",
        "postgresql+psycopg://user@127.0.0.1:5432/test",
        "none",
    ],
)
def test_other_stores_are_kept_as_given(uri: str) -> None:
    assert absolute_store_uri(uri) == uri


def _result(**changes: object) -> RunResult:
    fields: dict[str, object] = dict(
        run_uid="r",
        instance_uid="i",
        experiment_uid="e",
        status="finished",
        exit_code=0,
        reason="",
        store_uri="none",
    )
    fields.update(changes)
    return RunResult(**fields)  # type: ignore[arg-type]


def test_a_run_recorded_nowhere_has_no_rows_to_query() -> None:
    result = _result()
    assert result.ok
    with pytest.raises(InvalidInputError, match="run 'r' was recorded nowhere"):
        result.episode_rewards()


def test_a_run_that_died_before_recording_says_why_it_has_no_rows() -> None:
    result = _result(
        instance_uid="", status="error", exit_code=1, reason="the executor died", store_uri="x"
    )
    assert not result.ok
    with pytest.raises(InvalidInputError, match="no instance in the store: the executor died"):
        result.world_states()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"parallel": 0}, "parallel must be 1 or more, got 0."),
        (
            {"grid": {"seed": "123"}},
            "grid['seed']: expected a non-empty list of values, got str '123'.",
        ),
        ({"grid": {"seed": 5}}, "grid['seed']: expected a non-empty list of values, got int 5."),
        (
            {"grid": {"seed": []}},
            "grid['seed']: expected a non-empty list of values, got list [].",
        ),
        (
            {"seeds": 5},
            "seeds: expected the seeds' integers (a list or a range), got int 5.",
        ),
    ],
    ids=["parallel-0", "text", "number", "empty", "seeds-a-number"],
)
def test_a_sweep_that_cannot_start_raises_before_anything_runs(
    kwargs: dict[str, object], message: str
) -> None:
    """An empty grid entry ran nothing and returned [] (the command line refuses an empty
    value); seeds=5 raised a bare TypeError."""
    with pytest.raises(InvalidInputError) as caught:
        sweep("does-not-matter.yml", **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_the_python_api_refuses_a_store_that_would_lose_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``palaestra.run(..., store_uri="sqlite://x.db")`` raises before anything starts (the
    run file is not even read)."""
    import palaestra
    from palaestra.core.description.config import RuntimeConfig
    from palaestra.core.errors import RuntimeConfigError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeConfigError, match="follows three slashes"):
        palaestra.run("no-such-run.yml", store_uri="sqlite://x.db")
    with pytest.raises(RuntimeConfigError, match="is a store in memory"):  # (a config built)
        palaestra.run("no-such-run.yml", config=RuntimeConfig(store_uri="sqlite://"))


def test_the_python_api_takes_a_home_directory_as_a_read_config_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``palaestra.run(store_uri="sqlite:///~/runs.db")``, or a config built with ``~`` in
    it: the home directory (the store was made below the working directory, in ``~``)."""
    from palaestra.core.description.config import RuntimeConfig
    from palaestra.experiment.api import _settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    built = RuntimeConfig(data_path="~/out")
    settings = _settings(built, "sqlite:///~/runs.db", quiet=True)
    assert settings.store_uri == f"sqlite:///{tmp_path}/alice/runs.db"
    assert settings.data_path == f"{tmp_path}/alice/out"
    assert not (tmp_path / "~").exists()


def test_the_python_api_refuses_a_data_path_it_cannot_write_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raised to the caller before anything starts, not a run's outcome after its process
    started."""
    import palaestra
    from palaestra.core.errors import RuntimeConfigError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("a file where the directory would go\n")
    monkeypatch.setenv("PALAESTRA_DATA_PATH", str(tmp_path / "taken" / "dumps"))
    with pytest.raises(RuntimeConfigError, match="where the Brains write their dumps"):
        palaestra.run("no-such-run.yml")
