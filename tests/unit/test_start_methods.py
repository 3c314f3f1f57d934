"""The start method: the runtime config's ``start_method`` (file and environment), and the
``auto`` rule read from torch's CUDA state without importing torch."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import pytest

from palaestra.core.description.config import START_METHODS, RuntimeConfig, load_runtime_config
from palaestra.core.errors import EXIT_INVALID_INPUT, RuntimeConfigError
from palaestra.core.supervision import start_methods


def _config(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> RuntimeConfig:
    path = tmp_path / "runtime.yaml"
    path.write_text(text)
    return load_runtime_config(str(path), environ=environ or {})


def test_auto_is_the_default_and_each_method_is_accepted(tmp_path: Path) -> None:
    assert RuntimeConfig().start_method == "auto"
    assert load_runtime_config(None, environ={}).start_method == "auto"
    for method in START_METHODS:
        assert _config(tmp_path, f"start_method: {method}\n").start_method == method


def test_the_environment_variable_wins_over_the_file(tmp_path: Path) -> None:
    config = _config(tmp_path, "start_method: fork\n", {"PALAESTRA_START_METHOD": "spawn"})
    assert config.start_method == "spawn"
    assert (
        _config(tmp_path, "start_method: fork\n", {"PALAESTRA_START_METHOD": ""}).start_method
        == "fork"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "start_method: forkserve\n",
            "runtime.yaml: start_method: expected one of auto, fork, forkserver, spawn, got "
            "'forkserve'. Did you mean 'forkserver'?",
        ),
        (
            "start_method: threads\n",
            "start_method: expected one of auto, fork, forkserver, spawn, got 'threads'",
        ),
        ("start_method: 3\n", "runtime.yaml: start_method: expected a string, got 3"),
        ("start_methods: fork\n", "unknown setting 'start_methods'. Did you mean 'start_method'?"),
    ],
)
def test_a_bad_start_method_in_the_file_names_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(RuntimeConfigError) as caught:
        _config(tmp_path, text)
    assert expected in str(caught.value)
    assert str(tmp_path / "runtime.yaml") in str(caught.value)
    assert caught.value.exit_code == EXIT_INVALID_INPUT


def test_a_bad_start_method_in_the_environment_names_the_variable() -> None:
    with pytest.raises(RuntimeConfigError) as caught:
        load_runtime_config(None, environ={"PALAESTRA_START_METHOD": "Spawn"})
    assert str(caught.value) == (
        "the environment variable PALAESTRA_START_METHOD: expected one of auto, fork, "
        "forkserver, spawn, got 'Spawn'. Did you mean 'spawn'?"
    )
    assert caught.value.exit_code == EXIT_INVALID_INPUT


def _fake_torch(
    monkeypatch: pytest.MonkeyPatch, *, initialised: object = False, bad_fork: object = False
) -> None:
    def answer(value: object) -> object:
        if isinstance(value, BaseException):

            def raising() -> bool:
                raise value

            return raising
        return lambda: value

    cuda = types.SimpleNamespace(
        is_initialized=answer(initialised), _is_in_bad_fork=answer(bad_fork)
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))


def test_auto_is_fork_without_torch_and_never_imports_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with caplog.at_level(logging.WARNING):
        assert start_methods.resolve("auto") == "fork"
    assert "torch" not in sys.modules
    assert caplog.records == []


def test_auto_is_fork_while_cuda_is_not_initialised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _fake_torch(monkeypatch, initialised=False)
    with caplog.at_level(logging.WARNING):
        assert start_methods.resolve("auto") == "fork"
    assert caplog.records == []


@pytest.mark.parametrize(
    ("initialised", "bad_fork"), [(True, False), (False, True)], ids=["initialised", "bad-fork"]
)
def test_auto_is_forkserver_where_cuda_is_initialised_with_one_warning(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    initialised: bool,
    bad_fork: bool,
) -> None:
    _fake_torch(monkeypatch, initialised=initialised, bad_fork=bad_fork)
    with caplog.at_level(logging.WARNING):
        assert start_methods.resolve("auto") == "forkserver"
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "CUDA is initialised in the executor" in record.getMessage()
    assert "start_method: forkserver" in record.getMessage()


def test_a_chosen_method_is_kept_without_a_word(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _fake_torch(monkeypatch, initialised=True)
    with caplog.at_level(logging.WARNING):
        for method in ("fork", "forkserver", "spawn"):
            assert start_methods.resolve(method) == method
    assert caplog.records == []


def test_a_broken_torch_counts_as_no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(monkeypatch, initialised=RuntimeError("driver"), bad_fork=RuntimeError("x"))
    assert start_methods.resolve("auto") == "fork"
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())  # no cuda at all
    assert start_methods.resolve("auto") == "fork"


def test_context_refuses_what_is_no_start_method() -> None:
    assert start_methods.context("spawn").get_start_method() == "spawn"
    for bad in ("auto", "thread"):
        with pytest.raises(ValueError, match="expected fork, forkserver or spawn"):
            start_methods.context(bad)


def test_a_child_started_fresh_does_not_run_the_callers_script_again() -> None:
    import multiprocessing.spawn

    from palaestra.core.supervision.processes import without_main

    main = sys.modules["__main__"]
    with without_main():
        data = multiprocessing.spawn.get_preparation_data("child")
        assert "init_main_from_path" not in data
        assert "init_main_from_name" not in data
        assert data["sys_path"]  # the child still gets this process's import path
    assert sys.modules["__main__"] is main
