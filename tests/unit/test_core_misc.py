"""Tests of the small core modules: seeds, class loading, transport paths, errors and the
runtime configuration."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.agent.dummy_brain import DummyBrain
from palaestra.core import files
from palaestra.core.description.loading import load_class
from palaestra.core.description.seeds import derive_seed
from palaestra.core.errors import (
    EXIT_INVALID_INPUT,
    EXIT_RUN_FAILED,
    EXIT_STORE_UNUSABLE,
    InvalidInputError,
    PalaestraError,
    PluginLoadError,
    RunFileError,
    RuntimeConfigError,
    StoreError,
    did_you_mean,
)
from palaestra.core.wire.transport import endpoint_for, make_run_dir, remove_run_dir
from palaestra.experiment.runtime_config import RuntimeConfig, load_runtime_config

# --- seeds ------------------------------------------------------------------------------------


def test_derive_seed_is_deterministic() -> None:
    assert derive_seed(42, "muscle", "attacker", 0, 1) == derive_seed(
        42, "muscle", "attacker", 0, 1
    )


def test_derive_seed_is_stable_across_versions_and_machines() -> None:
    """blake2b of ``"42\\x1fmuscle\\x1fattacker\\x1f0\\x1f1"``: no ``hash()`` involved."""
    assert derive_seed(42, "muscle", "attacker", 0, 1) == 3309394426
    assert derive_seed(0) == 613549620


def test_derive_seed_is_32_bit() -> None:
    seeds = [derive_seed(s, "part", i) for s in (0, 1, 2**63, -5) for i in range(200)]
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in seeds)
    assert max(seeds) >= 2**31  # uses the upper half too


def test_derive_seed_differs_across_parts_and_run_seeds() -> None:
    seeds = {
        derive_seed(run, role, agent, worker)
        for run in (1, 2)
        for role in ("muscle", "brain", "environment")
        for agent in ("attacker", "defender")
        for worker in range(5)
    }
    assert len(seeds) == 2 * 3 * 2 * 5
    assert derive_seed(1, "a", "b") != derive_seed(1, "b", "a")
    assert derive_seed(1, "ab") != derive_seed(1, "a", "b")
    assert derive_seed(1) != derive_seed(1, "")


# --- load_class ----------------------------------------------------------------------------------


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A directory on sys.path and a unique module-name prefix; imported modules are removed."""
    prefix = f"palaestra_test_{uuid.uuid4().hex[:12]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path, prefix
    for name in [n for n in sys.modules if n.startswith(prefix)]:
        del sys.modules[name]


def test_load_class_good_name() -> None:
    assert load_class("palaestra.agent.dummy_brain:DummyBrain") is DummyBrain


@pytest.mark.parametrize(
    "name",
    [
        "palaestra.agent.dummy_brain.DummyBrain",
        "palaestra.agent.dummy_brain",
        "a:b:C",
        ":DummyBrain",
        "palaestra.agent.dummy_brain:",
        ":",
        "",
    ],
)
def test_load_class_needs_one_colon_with_both_parts(name: str) -> None:
    with pytest.raises(PluginLoadError) as info:
        load_class(name)
    assert str(info.value) == (
        f"'{name}' is not a class name of the form 'package.module:ClassName'"
    )
    assert info.value.exit_code == EXIT_INVALID_INPUT


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("no_such_module_for_palaestra_tests:Thing", "no_such_module_for_palaestra_tests"),
        ("palaestra.no_such_module:Thing", "palaestra.no_such_module"),
        ("no_such_pkg_for_palaestra_tests.sub:Thing", "no_such_pkg_for_palaestra_tests.sub"),
        (
            "palaestra.core.description.seeds.sub:Thing",
            "palaestra.core.description.seeds.sub",
        ),  # parent is no package
    ],
)
def test_load_class_unknown_module(name: str, module: str) -> None:
    with pytest.raises(PluginLoadError) as info:
        load_class(name)
    assert str(info.value) == f"no module '{module}' (in '{name}')"


def test_load_class_module_raising_import_error(plugin_dir: tuple[Path, str]) -> None:
    path, prefix = plugin_dir
    (path / f"{prefix}_bad.py").write_text("import a_dependency_that_is_not_installed_xyz\n")
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{prefix}_bad:Thing")
    assert str(info.value) == (
        f"module '{prefix}_bad' failed to import: ModuleNotFoundError: "
        "No module named 'a_dependency_that_is_not_installed_xyz' "
        f"({path / f'{prefix}_bad.py'}, line 1: import a_dependency_that_is_not_installed_xyz)"
    )
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_load_class_module_raising_any_error(plugin_dir: tuple[Path, str]) -> None:
    path, prefix = plugin_dir
    (path / f"{prefix}_boom.py").write_text("raise RuntimeError('boom at import')\n")
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{prefix}_boom:Thing")
    assert str(info.value) == (
        f"module '{prefix}_boom' failed to import: RuntimeError: boom at import "
        f"({path / f'{prefix}_boom.py'}, line 1: raise RuntimeError('boom at import'))"
    )


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import sys\nsys.exit(0)\n", "line 2: sys.exit(0)"),
        (
            "import argparse\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n",
            "line 3: args = parser.parse_args()",
        ),
    ],
    ids=["sys.exit", "argparse"],
)
def test_load_class_module_exiting_at_import_fails_naming_its_line(
    plugin_dir: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    source: str,
    line: str,
) -> None:
    """``sys.exit(0)`` at import ended palaestra itself: ``palaestra check`` and
    ``experiment-start`` exited 0 at once, nothing checked or run; an argparse parser run at
    import ended it with exit 2 and the parser's usage, as if it were palaestra's."""
    path, prefix = plugin_dir
    name = f"{prefix}_exits_{len(source)}"  # (a module of its own for each)
    (path / f"{name}.py").write_text(source)
    monkeypatch.setattr(sys, "argv", ["palaestra", "check", "run.yml"])
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{name}:Thing")
    capsys.readouterr()  # (argparse's usage)
    code = 0 if "sys.exit" in line else 2
    assert str(info.value) == (
        f"module '{name}' failed to import: SystemExit: {code} ({path / f'{name}.py'}, {line})"
    )
    assert info.value.exit_code == EXIT_INVALID_INPUT


def test_load_class_module_with_a_syntax_error_names_its_line(
    plugin_dir: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, prefix = plugin_dir
    (path / f"{prefix}_typo.py").write_text("x = 1\ndef f(:\n    pass\n")
    monkeypatch.chdir(path)  # (below the working directory: shown relative to it)
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{prefix}_typo:Thing")
    assert str(info.value) == (
        f"module '{prefix}_typo' failed to import: SyntaxError: invalid syntax "
        f"({prefix}_typo.py, line 2: def f(:)"
    )


def test_load_class_parent_package_whose_init_raises(plugin_dir: tuple[Path, str]) -> None:
    path, prefix = plugin_dir
    package = path / f"{prefix}_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise ValueError('broken package init')\n")
    (package / "mod.py").write_text("class Thing:\n    pass\n")
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{prefix}_pkg.mod:Thing")
    assert str(info.value) == (
        f"cannot import module '{prefix}_pkg.mod': ValueError: broken package init "
        f"({package / '__init__.py'}, line 1: raise ValueError('broken package init'))"
    )


def test_load_class_parent_package_missing_a_dependency(plugin_dir: tuple[Path, str]) -> None:
    path, prefix = plugin_dir
    package = path / f"{prefix}_deps"
    package.mkdir()
    (package / "__init__.py").write_text("import a_dependency_that_is_not_installed_xyz\n")
    (package / "mod.py").write_text("class Thing:\n    pass\n")
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{prefix}_deps.mod:Thing")
    assert "a_dependency_that_is_not_installed_xyz" in str(info.value)


def test_load_class_missing_class_with_did_you_mean(plugin_dir: tuple[Path, str]) -> None:
    path, prefix = plugin_dir
    (path / f"{prefix}_ok.py").write_text(
        "import json\n\nclass MyBrain:\n    pass\n\ndef helper():\n    pass\n"
    )
    module = f"{prefix}_ok"
    assert load_class(f"{module}:MyBrain").__name__ == "MyBrain"
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{module}:MyBrian")
    assert str(info.value) == f"no class '{module}:MyBrian'. Did you mean 'MyBrain'?"
    with pytest.raises(PluginLoadError) as info:
        load_class(f"{module}:Unrelated")
    assert str(info.value) == f"no class '{module}:Unrelated'"
    # a name that is there but not a class
    for attribute in ("helper", "json"):
        with pytest.raises(PluginLoadError, match=f"no class '{module}:{attribute}'"):
            load_class(f"{module}:{attribute}")


def test_load_class_did_you_mean_in_a_palaestra_module() -> None:
    with pytest.raises(PluginLoadError) as info:
        load_class("palaestra.agent.dummy_brain:DummyBrian")
    assert "Did you mean 'DummyBrain'?" in str(info.value)


# --- transport --------------------------------------------------------------------------------


@pytest.fixture
def run_dir() -> Iterator[str]:
    path = make_run_dir()
    yield path
    remove_run_dir(path)


def ipc_path(endpoint: str) -> str:
    assert endpoint.startswith("ipc://")
    return endpoint.removeprefix("ipc://")


def test_make_run_dir_is_private(run_dir: str) -> None:
    mode = os.stat(run_dir).st_mode
    assert stat.S_ISDIR(mode)
    assert stat.S_IMODE(mode) == 0o700
    assert os.path.basename(run_dir).startswith("palaestra-")


def test_make_run_dir_is_new_each_time(run_dir: str) -> None:
    other = make_run_dir()
    try:
        assert other != run_dir
    finally:
        remove_run_dir(other)
    assert not os.path.exists(other)


def test_a_run_dir_goes_to_tmp_where_the_temporary_directory_is_too_deep_for_sockets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``TMPDIR`` whose sockets' paths would pass 107 bytes (a deep home or scratch
    directory) failed every run ("ipc path ... is longer than 107 characters"): the run's
    directory is then made in /tmp, where its longest socket path fits; a ``TMPDIR`` that fits
    is kept, to the byte (a non-ASCII name counts its bytes)."""
    deep = "/tmp/" + "d" * 40
    monkeypatch.setattr(tempfile, "tempdir", deep)
    path = make_run_dir()
    try:
        assert os.path.dirname(path) == "/tmp"
        longest = os.path.join(path, "x" * 24 + "-" + "0" * 16 + ".marks")
        assert len(os.fsencode(longest)) <= files.SOCKET_PATH_MAX
    finally:
        remove_run_dir(path)
    below = 1 + len("palaestra-") + 8 + files.LONGEST_NAME
    fits = "/tmp/" + "f" * (files.SOCKET_PATH_MAX - below - len("/tmp/"))
    monkeypatch.setattr(tempfile, "tempdir", fits)
    assert files.socket_parent("palaestra-", files.LONGEST_NAME) == fits
    monkeypatch.setattr(tempfile, "tempdir", fits[:-1] + "\u00e9")  # (2 bytes: 1 too many)
    assert files.socket_parent("palaestra-", files.LONGEST_NAME) == "/tmp"


def test_remove_run_dir_removes_contents_and_tolerates_missing(tmp_path: Path) -> None:
    path = make_run_dir()
    Path(path, "x.sock").write_text("")
    remove_run_dir(path)
    assert not os.path.exists(path)
    remove_run_dir(path)  # already gone: fine


@pytest.mark.parametrize("name", ["Executor-store", "Brain-defender-brain", "a b/c:d"])
def test_endpoint_for_is_ipc_inside_the_run_dir(run_dir: str, name: str) -> None:
    endpoint = endpoint_for(run_dir, name)
    path = ipc_path(endpoint)
    assert os.path.dirname(path) == run_dir
    assert path.endswith(".sock")
    assert "/" not in os.path.basename(path).removesuffix(".sock")
    assert endpoint_for(run_dir, name) == endpoint  # deterministic


def test_endpoint_for_short_name_is_readable(run_dir: str) -> None:
    assert endpoint_for(run_dir, "Brain-x-brain") == f"ipc://{run_dir}/Brain-x-brain.sock"


@pytest.mark.parametrize("length", [80, 107, 200, 5000])
def test_endpoint_for_long_names_fits_a_unix_socket(run_dir: str, length: int) -> None:
    name = "Muscle-" + "x" * length
    path = ipc_path(endpoint_for(run_dir, name))
    assert len(path.encode()) <= 107
    assert os.path.dirname(path) == run_dir


def test_endpoint_for_non_ascii_long_names_fits_a_unix_socket(run_dir: str) -> None:
    path = ipc_path(endpoint_for(run_dir, "Ägent-😀" * 60))
    assert len(path.encode()) <= 107
    assert os.path.dirname(path) == run_dir


def test_endpoint_for_distinct_long_names_are_distinct(run_dir: str) -> None:
    base = "Muscle-" + "a" * 150
    names = [base + suffix for suffix in ("-0", "-1", "-2", "/0", ":0")] + ["b" + base]
    endpoints = {endpoint_for(run_dir, n) for n in names}
    assert len(endpoints) == len(names)


def test_endpoint_for_distinct_short_names_are_distinct(run_dir: str) -> None:
    names = ["Brain-red team-brain", "Brain-red_team-brain", "Brain-red/team-brain"]
    assert len({endpoint_for(run_dir, n) for n in names}) == len(names)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "<run file>: bad thing"),
        ({"path": "run.yml"}, "run.yml: bad thing"),
        ({"path": "run.yml", "line": 12}, "run.yml:12: bad thing"),
        ({"path": "run.yml", "key": "schedule[0]"}, "run.yml: schedule[0]: bad thing"),
        (
            {"path": "run.yml", "line": 3, "key": "schedule[0].phase_0.agents"},
            "run.yml:3: schedule[0].phase_0.agents: bad thing",
        ),
        ({"line": 1}, "<run file>:1: bad thing"),
        (
            {"path": "r.yml", "line": 4, "key": "seed", "hint": "Use an integer."},
            "r.yml:4: seed: bad thing\n       Use an integer.",
        ),
        ({"hint": "Do this."}, "<run file>: bad thing\n       Do this."),
    ],
)
def test_run_file_error_format_message(kwargs: dict[str, object], expected: str) -> None:
    error = RunFileError("bad thing", **kwargs)  # type: ignore[arg-type]
    assert error.format_message() == expected
    assert str(error) == expected
    assert error.message == "bad thing"
    assert error.exit_code == EXIT_INVALID_INPUT
    assert isinstance(error, InvalidInputError)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (PalaestraError("x"), 1),
        (InvalidInputError("x"), 2),
        (RunFileError("x"), 2),
        (RuntimeConfigError("x"), 2),
        (PluginLoadError("x"), 2),
        (StoreError("x"), 3),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_exit_codes(error: PalaestraError, code: int) -> None:
    assert error.exit_code == code
    assert isinstance(error, PalaestraError)


def test_exit_code_constants() -> None:
    assert (EXIT_RUN_FAILED, EXIT_INVALID_INPUT, EXIT_STORE_UNUSABLE) == (1, 2, 3)


def test_plain_error_format_message_is_str() -> None:
    assert StoreError("store x: gone").format_message() == "store x: gone"


def test_did_you_mean() -> None:
    assert did_you_mean("store_url", ["store_uri", "data_path"]) == "Did you mean 'store_uri'?"
    assert did_you_mean("zzz", ["store_uri", "data_path"]) is None
    assert did_you_mean("x", []) is None


# --- runtime config ---------------------------------------------------------------------------

DEFAULTS = RuntimeConfig("sqlite:///palaestra.db", "./_outputs", "WARNING")


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory, so no ./palaestra-runtime.yaml is picked up by accident."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_runtime_config_defaults(in_tmp: Path) -> None:
    config = load_runtime_config(environ={})
    assert config == DEFAULTS
    assert RuntimeConfig() == DEFAULTS
    assert config.dump() == (
        "store_uri: sqlite:///palaestra.db\ndata_path: ./_outputs\nlog_level: WARNING\n"
        "answer_timeout: 300.0\nstart_timeout: 60.0\nstop_timeout: 10.0\nstore_timeout: 60.0\n"
        "probe_timeout: 30.0\n"
        "start_method: auto\n"
        "backend: local\n"
        "ray_address: ''\n"
        "cpu_affinity: none\n"
        "spin_us: 200.0\n"
        "round_groups: auto\n"
        "writer_priority: normal\n"
    )


def test_runtime_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        RuntimeConfig().store_uri = "x"  # type: ignore[misc]


def test_runtime_config_file_values(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "store_uri: sqlite:////tmp/x.db\nlog_level: DEBUG\n")
    config = load_runtime_config(path, environ={})
    assert config == RuntimeConfig("sqlite:////tmp/x.db", "./_outputs", "DEBUG")


def test_a_home_directory_in_the_runtime_config_is_expanded(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~`` in ``data_path`` or in a SQLite store's path (from the file, or from the
    environment in quotes) made a directory named ``~`` in the working directory."""
    monkeypatch.setenv("HOME", "/home/alice")
    path = write(in_tmp / "rt.yaml", "store_uri: sqlite:///~/runs/x.db\ndata_path: ~/out\n")
    config = load_runtime_config(path, environ={})
    assert (config.store_uri, config.data_path) == (
        "sqlite:////home/alice/runs/x.db",
        "/home/alice/out",
    )
    environ = {
        "PALAESTRA_STORE_URI": "sqlite+pysqlite:///~/y.db",
        "PALAESTRA_DATA_PATH": "~",
    }
    config = load_runtime_config(path, environ=environ)
    assert (config.store_uri, config.data_path) == (
        "sqlite+pysqlite:////home/alice/y.db",
        "/home/alice",
    )
    kept = "postgresql+psycopg://~user@host/db"  # (not a path)
    assert load_runtime_config(path, environ={"PALAESTRA_STORE_URI": kept}).store_uri == kept


@pytest.mark.parametrize(
    "store_uri",
    ["sqlite://palaestra.db", "sqlite+pysqlite://runs.db", "sqlite://", "sqlite:///:memory:"],
)
def test_a_sqlite_store_that_is_not_a_file_is_refused(in_tmp: Path, store_uri: str) -> None:
    with pytest.raises(RuntimeConfigError, match="store_uri"):
        load_runtime_config(environ={"PALAESTRA_STORE_URI": store_uri})


@pytest.mark.parametrize(
    "store_uri",
    [
        "sqlite:///palaestra.db",
        "sqlite:////abs/x.db",
        "sqlite+pysqlite:///x.db",
        "sqlite:///q%3Fuery.db",  # (a file named 'q?uery.db')
        "postgresql+psycopg://user@127.0.0.1:5432/test",
        "postgresql+psycopg://user@[::1]:5432/test",
        "postgresql+psycopg://user:p:w/x@127.0.0.1/test",
        "none",
    ],
)
def test_a_store_that_keeps_its_rows_is_taken(in_tmp: Path, store_uri: str) -> None:
    assert load_runtime_config(environ={"PALAESTRA_STORE_URI": store_uri}).store_uri == store_uri
    padded = {"PALAESTRA_STORE_URI": f" {store_uri}\t"}  # ("store_uri: ' sqlite:///x.db '")
    assert load_runtime_config(environ=padded).store_uri == store_uri


def test_runtime_config_default_file_in_the_cwd(in_tmp: Path) -> None:
    write(in_tmp / "palaestra-runtime.yaml", "data_path: /data/out\n")
    assert load_runtime_config(environ={}).data_path == "/data/out"
    # an explicit file wins over the default file
    other = write(in_tmp / "other.yaml", "log_level: INFO\n")
    assert load_runtime_config(other, environ={}) == RuntimeConfig(log_level="INFO")


def test_runtime_config_environment_wins_over_the_file(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "store_uri: sqlite:///file.db\ndata_path: /from/file\n")
    environ = {"PALAESTRA_STORE_URI": "sqlite:///env.db", "PALAESTRA_DATA_PATH": "/from/env"}
    config = load_runtime_config(path, environ=environ)
    assert config == RuntimeConfig("sqlite:///env.db", "/from/env", "WARNING")
    only_store = load_runtime_config(path, environ={"PALAESTRA_STORE_URI": "sqlite:///e.db"})
    assert only_store == RuntimeConfig("sqlite:///e.db", "/from/file", "WARNING")


def test_runtime_config_empty_environment_values_are_ignored(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "store_uri: sqlite:///file.db\n")
    config = load_runtime_config(path, environ={"PALAESTRA_STORE_URI": ""})
    assert config.store_uri == "sqlite:///file.db"


def test_runtime_config_empty_file_gives_defaults(in_tmp: Path) -> None:
    assert load_runtime_config(write(in_tmp / "e.yaml", ""), environ={}) == DEFAULTS
    assert load_runtime_config(write(in_tmp / "c.yaml", "# nothing\n"), environ={}) == DEFAULTS


def test_runtime_config_unknown_key_with_did_you_mean(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "store_url: sqlite:///x.db\n")
    with pytest.raises(RuntimeConfigError) as info:
        load_runtime_config(path, environ={})
    assert str(info.value) == f"{path}: unknown setting 'store_url'. Did you mean 'store_uri'?"
    assert info.value.exit_code == EXIT_INVALID_INPUT


def test_runtime_config_unknown_key_without_a_close_match(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "colour: blue\n")
    with pytest.raises(RuntimeConfigError) as info:
        load_runtime_config(path, environ={})
    assert str(info.value) == f"{path}: unknown setting 'colour'"


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_runtime_config_non_mapping_file(in_tmp: Path, text: str) -> None:
    path = write(in_tmp / "rt.yaml", text)
    with pytest.raises(RuntimeConfigError) as info:
        load_runtime_config(path, environ={})
    assert str(info.value) == f"{path}: expected a mapping of settings"


@pytest.mark.parametrize("text", ["store_uri: [1, 2]\n", "log_level: 10\n", "data_path:\n"])
def test_runtime_config_non_string_value(in_tmp: Path, text: str) -> None:
    path = write(in_tmp / "rt.yaml", text)
    with pytest.raises(RuntimeConfigError, match="expected a string"):
        load_runtime_config(path, environ={})


def test_runtime_config_invalid_yaml(in_tmp: Path) -> None:
    path = write(in_tmp / "rt.yaml", "store_uri: [unclosed\n")
    with pytest.raises(RuntimeConfigError, match=r"not valid YAML"):
        load_runtime_config(path, environ={})


def test_runtime_config_unreadable_file(in_tmp: Path) -> None:
    missing = str(in_tmp / "missing.yaml")
    with pytest.raises(RuntimeConfigError) as info:
        load_runtime_config(missing, environ={})
    assert str(info.value) == (
        f"{missing}: cannot read the runtime config: No such file or directory"
    )
    with pytest.raises(RuntimeConfigError, match="cannot read the runtime config"):
        load_runtime_config(str(in_tmp), environ={})  # a directory


def test_runtime_config_not_utf8(in_tmp: Path) -> None:
    path = in_tmp / "rt.yaml"
    path.write_bytes(b"store_uri: \xff\xfe\n")
    with pytest.raises(RuntimeConfigError):
        load_runtime_config(str(path), environ={})


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("postgresql://user@127.0.0.1:5432/test", "postgresql+psycopg://user@127.0.0.1:5432/test"),
        ("postgres://user@h/db", "postgresql+psycopg://user@h/db"),
        ("PostgreSQL+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("SQLITE:///Runs.db", "sqlite:///Runs.db"),
    ],
)
def test_a_store_uri_is_taken_as_its_scheme_means(in_tmp: Path, given: str, taken: str) -> None:
    """``postgresql://`` (as libpq and most tools write it) started the run and failed it at
    the store writer, which took only ``postgresql+psycopg://``; ``postgres://`` was no
    database to SQLAlchemy; an upper-case scheme neither."""
    assert load_runtime_config(environ={"PALAESTRA_STORE_URI": given}).store_uri == taken


@pytest.mark.parametrize(
    ("store_uri", "said"),
    [
        ("palaestra.db", "is no store URI (a file: sqlite:///palaestra.db); expected sqlite:///"),
        ("sqlite:/x.db", "is no store URI; expected sqlite:///<file>"),
        ("mysql://u@h/db", "palaestra has no store writer for 'mysql'; expected sqlite:///"),
    ],
)
def test_a_store_uri_palaestra_cannot_write_is_refused_before_the_run(
    in_tmp: Path, store_uri: str, said: str
) -> None:
    """These started the run and failed it at the store writer (or at SQLAlchemy's "Could not
    parse SQLAlchemy URL")."""
    with pytest.raises(RuntimeConfigError) as refused:
        load_runtime_config(environ={"PALAESTRA_STORE_URI": store_uri})
    assert said in str(refused.value)
    assert "postgresql://<user>@<host>:<port>/<database>, or none" in str(refused.value)


@pytest.mark.parametrize(
    "store_uri",
    [
        "mysql://root:hunter2@db.example/runs",
        "mssql+pyodbc://root:hunter2@db.example/runs",
        "sqlite://root:hunter2@db.example/runs.db",
    ],
)
def test_a_refused_store_uri_is_named_without_its_password(in_tmp: Path, store_uri: str) -> None:
    """The refusal showed the store URI as given, password and all (exit 2), where every other
    message about a store hides it."""
    with pytest.raises(RuntimeConfigError) as refused:
        load_runtime_config(environ={"PALAESTRA_STORE_URI": store_uri})
    said = str(refused.value)
    assert "hunter2" not in said
    assert "root:***@db.example" in said


@pytest.mark.parametrize(
    "store_uri",
    [
        "postgresql+psycopg://postgres:hun@ter2@127.0.0.1:5432/runs",
        "postgresql://me@home:pw@db.example/runs",
    ],
)
def test_a_store_uri_whose_password_holds_an_at_is_refused_without_showing_it(
    in_tmp: Path, store_uri: str
) -> None:
    """An '@' written as it is in a password ends it there: the store's messages showed
    'postgres:***@ter2@127.0.0.1' (the password's rest), and the driver's said it could not
    resolve the host 'ter2@127.0.0.1'. It is refused, saying to write %40, its user and
    password hidden."""
    with pytest.raises(RuntimeConfigError) as refused:
        load_runtime_config(environ={"PALAESTRA_STORE_URI": store_uri})
    said = str(refused.value)
    assert "ter2" not in said and "pw" not in said and "home" not in said
    assert "holds '@', which a URI writes as %40" in said
    assert said.startswith("store_uri '")
