"""One reader of the runtime config: the store's query functions read it as the CLI does."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.core.errors import RuntimeConfigError
from palaestra.store import engine
from palaestra.store.rows import resolve_store_uri


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PALAESTRA_STORE_URI", raising=False)
    return tmp_path


def test_the_store_default_is_written_once() -> None:
    from palaestra.core.description.config import DEFAULT_STORE_URI, RuntimeConfig

    assert engine.DEFAULT_STORE_URI is DEFAULT_STORE_URI
    assert RuntimeConfig().store_uri == DEFAULT_STORE_URI


def test_the_query_functions_read_the_configured_store(in_tmp: Path) -> None:
    (in_tmp / "palaestra-runtime.yaml").write_text("store_uri: sqlite:///elsewhere.db\n")
    assert resolve_store_uri() == "sqlite:///elsewhere.db"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("store_urj: sqlite:///x.db\n", "unknown setting 'store_urj'. Did you mean 'store_uri'?"),
        ("answer_timeout: -1\n", "answer_timeout: expected a number of seconds > 0, got -1"),
        ("stop_timeout: 0\n", "stop_timeout: expected a number of seconds > 0, got 0"),
        # NaN is no number > 0: probe_timeout .nan failed with a bare ValueError traceback
        ("probe_timeout: .nan\n", "probe_timeout: expected a number of seconds > 0, got nan"),
        ("answer_timeout: .NaN\n", "answer_timeout: expected a number of seconds > 0, got nan"),
        ("- store_uri\n", "expected a mapping of settings"),
        ("cpu_affinity: workers\n", "cpu_affinity: expected one of none, worker, got 'workers'"),
        ("spin_us: -1\n", "spin_us: expected a number of microseconds from 0 to 10,000, got -1"),
        ("spin_us: fast\n", "spin_us: expected a number of microseconds from 0 to 10,000, got"),
        ("spin_us: true\n", "spin_us: expected a number of microseconds from 0 to 10,000, got"),
        ('spin_us: "50"\n', "spin_us: expected a number of microseconds from 0 to 10,000, got"),
        ("spin_us: 1e9\n", "spin_us: expected a number of microseconds from 0 to 10,000, got"),
        ("round_groups: 0\n", "round_groups: expected one of auto, 1, 2, 3, 4, got '0'"),
        ("round_groups: two\n", "round_groups: expected one of auto, 1, 2, 3, 4, got 'two'"),
        ("round_groups: true\n", "round_groups: expected auto or 1 to 4, got True"),
        ("round_groups: 1.5\n", "round_groups: expected auto or 1 to 4, got 1.5"),
        # log_level VERBOSE failed the command with a bare ValueError traceback (exit 1)
        ("log_level: VERBOSE\n", "log_level: expected one of DEBUG, INFO, WARNING, ERROR, C"),
        ("log_level: 10\n", "log_level: expected a string, got 10"),
    ],
)
def test_the_query_functions_check_the_runtime_config_as_the_cli_does(
    in_tmp: Path, text: str, expected: str
) -> None:
    (in_tmp / "palaestra-runtime.yaml").write_text(text)
    with pytest.raises(RuntimeConfigError, match=f"palaestra-runtime.yaml: {expected}"):
        resolve_store_uri()


@pytest.mark.parametrize("level", ["debug", "Info", "WARNING", "error", "critical"])
def test_a_log_level_is_taken_in_any_case(in_tmp: Path, level: str) -> None:
    from palaestra.core.description.config import load_runtime_config

    (in_tmp / "palaestra-runtime.yaml").write_text(f"log_level: {level}\n")
    assert load_runtime_config(environ={}).log_level == level


def test_a_phases_stop_timeout_comes_from_the_file(in_tmp: Path) -> None:
    from palaestra.core.description.config import load_runtime_config

    assert load_runtime_config(environ={}).stop_timeout == 10.0
    (in_tmp / "palaestra-runtime.yaml").write_text("stop_timeout: 60\n")
    assert load_runtime_config(environ={}).stop_timeout == 60


@pytest.mark.parametrize(
    ("key", "variable", "default", "other", "bad"),
    [
        ("cpu_affinity", "PALAESTRA_CPU_AFFINITY", "none", "worker", "core"),
        ("writer_priority", "PALAESTRA_WRITER_PRIORITY", "normal", "background", "idle"),
    ],
)
def test_a_setting_of_a_few_values_comes_from_the_file_and_the_environment(
    in_tmp: Path, key: str, variable: str, default: str, other: str, bad: str
) -> None:
    """The file's value over the default, the variable's over the file's; a value that is
    none of the setting's is refused naming where it came from."""
    from palaestra.core.description.config import load_runtime_config

    assert getattr(load_runtime_config(environ={}), key) == default
    (in_tmp / "palaestra-runtime.yaml").write_text(f"{key}: {other}\n")
    assert getattr(load_runtime_config(environ={}), key) == other
    assert getattr(load_runtime_config(environ={variable: default}), key) == default
    with pytest.raises(RuntimeConfigError, match=f"{variable}: expected one of"):
        load_runtime_config(environ={variable: bad})
    (in_tmp / "palaestra-runtime.yaml").write_text(f"{key}: {bad}\n")
    with pytest.raises(RuntimeConfigError, match=f"{key}: expected one of"):
        load_runtime_config(environ={})


def test_spin_us_comes_from_the_file_and_the_environment(in_tmp: Path) -> None:
    from palaestra.core.description.config import load_runtime_config

    assert load_runtime_config(environ={}).spin_us == 200.0
    (in_tmp / "palaestra-runtime.yaml").write_text("spin_us: 0\n")
    assert load_runtime_config(environ={}).spin_us == 0.0
    assert isinstance(load_runtime_config(environ={}).spin_us, float)  # (0 in the file)
    assert load_runtime_config(environ={"PALAESTRA_SPIN_US": "50"}).spin_us == 50.0
    for text in ("nan", "inf", "-1", "20000", "fast"):
        with pytest.raises(RuntimeConfigError, match="PALAESTRA_SPIN_US: expected a number of"):
            load_runtime_config(environ={"PALAESTRA_SPIN_US": text})


def test_round_groups_come_from_the_file_and_the_environment(in_tmp: Path) -> None:
    from palaestra.core.description.config import load_runtime_config

    assert load_runtime_config(environ={}).round_groups == "auto"
    (in_tmp / "palaestra-runtime.yaml").write_text("round_groups: 2\n")
    assert load_runtime_config(environ={}).round_groups == "2"  # (a number: its text)
    assert load_runtime_config(environ={"PALAESTRA_ROUND_GROUPS": "auto"}).round_groups == "auto"
    with pytest.raises(RuntimeConfigError, match="PALAESTRA_ROUND_GROUPS: expected one of"):
        load_runtime_config(environ={"PALAESTRA_ROUND_GROUPS": "8"})
