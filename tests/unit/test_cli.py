"""Tests of the command line, :mod:`palaestra.cli.main`, through click's CliRunner.

No command here starts a process: ``experiment-start`` only ever sees invalid run files.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from palaestra import __version__
from palaestra.cli.main import cli
from palaestra.store.tables import metadata as METADATA
from tests.conftest import cli_runner

REPO = Path(__file__).parents[2]
DUMMY_RUN = REPO / "experiments" / "dummy_run.yml"
CLEAN_ENV: dict[str, str | None] = {"PALAESTRA_STORE_URI": None, "PALAESTRA_DATA_PATH": None}
BAD_LINE = 16  # the line of the unknown key in the invalid run file
BAD_KEY = "schedule[0].phase_0.agents[0].colour"


def runner(**env: str | None) -> CliRunner:
    """A runner with the palaestra variables unset unless given."""
    return cli_runner({**CLEAN_ENV, **env})


def invoke(args: list[str], env: Mapping[str, str | None] | None = None) -> Result:
    return runner(**(env or {})).invoke(cli, args, prog_name="palaestra")


def write_invalid_run_file(directory: Path) -> Path:
    """dummy_run.yml with an unknown key ``colour`` in the first agent, on line 16."""
    lines = DUMMY_RUN.read_text(encoding="utf-8").splitlines()
    at = lines.index("        - name: defender")
    lines.insert(at + 1, "          colour: red")
    assert at + 2 == BAD_LINE
    path = directory / "bad_run.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def in_directory(tmp_path: Path) -> Iterator[str]:
    """Run in a fresh directory (what the deprecated ``isolated_filesystem`` did)."""
    with pytest.MonkeyPatch.context() as mp:
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        mp.chdir(cwd)
        yield str(cwd)


def sqlite_tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {name for (name,) in rows}


# --- basics ---------------------------------------------------------------------------------


def test_version() -> None:
    result = invoke(["--version"])
    assert result.exit_code == 0
    assert result.output == f"palaestra, version {__version__}\n"


def test_help_lists_commands_and_exit_codes() -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    text = result.output
    for command in (
        "experiment-start",
        "experiment-check-syntax",
        "experiment-list",
        "database-create",
        "runtime-config-show-default",
        "runtime-config-show-effective",
    ):
        assert command in text
    assert "Exit codes:" in text
    for line in (
        "0    success",
        "1    a run failed",
        "2    invalid input",
        "3    the store is unusable",
        "130  interrupted by SIGINT (Ctrl-C), 143 by SIGTERM",
    ):
        assert line in text


def test_help_gives_whole_descriptions_and_the_aliases() -> None:
    result = runner(COLUMNS="200").invoke(
        cli, ["--help"], prog_name="palaestra", terminal_width=200
    )
    assert result.exit_code == 0
    text = " ".join(result.output.split())  # as one line, however click wraps it
    assert "..." not in result.output.split("Commands:")[1]  # nothing cut
    for shown in (
        "experiment-start (start) Run one or more run files.",
        "experiment-check-syntax (check) Validate run files without running them.",
        "experiment-list (list) List the runs in the store, one line per instance.",
        "clean Delete runs with all their instances, phases, agents, records and brain dumps.",
        "results Export a table of a run as CSV, JSON or Parquet (to stdout without -o).",
    ):
        assert shown in text
    assert 'eval "$(_PALAESTRA_COMPLETE=bash_source palaestra)"' in result.output


def test_shell_completion_completes_commands() -> None:
    script = runner(_PALAESTRA_COMPLETE="bash_source").invoke(cli, [], prog_name="palaestra")
    assert script.exit_code == 0
    assert "_palaestra_completion()" in script.output
    completed = runner(
        _PALAESTRA_COMPLETE="bash_complete", COMP_WORDS="palaestra experiment-s", COMP_CWORD="1"
    ).invoke(cli, [], prog_name="palaestra")
    assert completed.output.split() == ["plain,experiment-show", "plain,experiment-start"]


def test_start_help_lists_exit_codes() -> None:
    result = invoke(["experiment-start", "--help"])
    assert result.exit_code == 0
    assert "Exit codes:" in result.output
    assert "3    the store is unusable" in result.output


def test_unknown_command_is_a_usage_error() -> None:
    result = invoke(["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


# --- runtime config ---------------------------------------------------------------------------


def test_runtime_config_show_default(tmp_path: Path) -> None:
    r = runner(PALAESTRA_STORE_URI="sqlite:///ignored.db")
    with in_directory(tmp_path):
        Path("palaestra-runtime.yaml").write_text("log_level: DEBUG\n")
        result = r.invoke(cli, ["runtime-config-show-default"])
    assert result.exit_code == 0
    assert result.output == (
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


def test_runtime_config_show_effective_without_a_file(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path):
        result = r.invoke(cli, ["runtime-config-show-effective"])
    assert result.exit_code == 0
    assert "store_uri: sqlite:///palaestra.db\n" in result.output


def test_runtime_config_show_effective_with_a_file(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path):
        Path("rt.yaml").write_text("store_uri: sqlite:///from-file.db\nlog_level: INFO\n")
        result = r.invoke(cli, ["-c", "rt.yaml", "runtime-config-show-effective"])
    assert result.exit_code == 0
    assert result.output == (
        "store_uri: sqlite:///from-file.db\ndata_path: ./_outputs\nlog_level: INFO\n"
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


def test_runtime_config_show_effective_reads_the_default_file_in_the_cwd(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path):
        Path("palaestra-runtime.yaml").write_text("data_path: /somewhere\n")
        result = r.invoke(cli, ["runtime-config-show-effective"])
    assert result.exit_code == 0
    assert "data_path: /somewhere\n" in result.output


def test_runtime_config_show_effective_environment_wins(tmp_path: Path) -> None:
    r = runner(PALAESTRA_STORE_URI="sqlite:///from-env.db")
    with in_directory(tmp_path):
        Path("rt.yaml").write_text("store_uri: sqlite:///from-file.db\n")
        with_file = r.invoke(cli, ["-c", "rt.yaml", "runtime-config-show-effective"])
        without_file = r.invoke(cli, ["runtime-config-show-effective"])
    for result in (with_file, without_file):
        assert result.exit_code == 0
        assert "store_uri: sqlite:///from-env.db\n" in result.output
        assert "from-file" not in result.output


def test_runtime_config_show_effective_hides_the_store_password(tmp_path: Path) -> None:
    """It printed the store URI whole, its password too, where every other message about a
    store hides it."""
    uri = "postgresql://me:s3cret@db.example:5432/runs"
    with in_directory(tmp_path):
        result = runner(PALAESTRA_STORE_URI=uri).invoke(cli, ["runtime-config-show-effective"])
    assert result.exit_code == 0, result.output
    assert "store_uri: postgresql+psycopg://me:***@db.example:5432/runs\n" in result.output
    assert "s3cret" not in result.output


@pytest.mark.parametrize(("flags", "level"), [(["-v"], "INFO"), (["-vv"], "DEBUG")])
def test_verbose_sets_the_log_level(tmp_path: Path, flags: list[str], level: str) -> None:
    r = runner()
    with in_directory(tmp_path):
        result = r.invoke(cli, [*flags, "runtime-config-show-effective"])
    assert result.exit_code == 0
    assert f"log_level: {level}\n" in result.output


def test_invalid_runtime_config_is_exit_2(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path):
        Path("rt.yaml").write_text("store_url: sqlite:///x.db\n")
        result = r.invoke(cli, ["-c", "rt.yaml", "runtime-config-show-effective"])
        missing = r.invoke(cli, ["-c", "missing.yaml", "runtime-config-show-effective"])
    assert result.exit_code == 2
    assert "rt.yaml: unknown setting 'store_url'. Did you mean 'store_uri'?" in result.stderr
    assert missing.exit_code == 2
    assert "missing.yaml: cannot read the runtime config" in missing.stderr
    assert "Traceback" not in result.output + missing.output


def test_runtime_config_not_utf8_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "rt.yaml"
    config.write_bytes(b"store_uri: \xff\xfe\n")
    result = invoke(["-c", str(config), "runtime-config-show-effective"])
    assert result.exit_code == 2
    assert str(config) in result.stderr


# --- experiment-check-syntax -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["experiment-check-syntax", "check"])
def test_check_syntax_of_the_dummy_run(command: str) -> None:
    result = invoke([command, str(DUMMY_RUN)])
    assert result.exit_code == 0, result.output
    assert result.output == f"{DUMMY_RUN}: OK ('dummy-run', 2 phases)\n"


def test_check_syntax_of_several_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "experiments"))  # the examples' plug-in modules
    examples = sorted((REPO / "experiments").glob("*.yml"))
    result = invoke(["check", *map(str, examples)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": OK (") == len(examples)


@pytest.mark.parametrize("command", ["experiment-check-syntax", "check"])
def test_check_syntax_of_an_invalid_run_file(tmp_path: Path, command: str) -> None:
    bad = write_invalid_run_file(tmp_path)
    result = invoke([command, str(DUMMY_RUN), str(bad)])
    assert result.exit_code == 2
    assert f"Error: {bad}:{BAD_LINE}: {BAD_KEY}: unknown key 'colour'" in result.stderr
    assert "Traceback" not in result.output
    # the valid file before it was still reported
    assert f"{DUMMY_RUN}: OK" in result.stdout


def test_check_syntax_of_a_missing_run_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yml"
    result = invoke(["check", str(missing)])
    assert result.exit_code == 2
    assert str(missing) in result.stderr
    assert "Traceback" not in result.output


def test_a_run_file_on_standard_input_is_read_from_it(tmp_path: Path) -> None:
    """``-`` is the run file on standard input (``generate | palaestra experiment-start -``):
    checked as a file is, its errors named ``<stdin>`` with the line; once at most."""
    text = DUMMY_RUN.read_text(encoding="utf-8")
    result = runner().invoke(cli, ["check", "-"], input=text, prog_name="palaestra")
    assert result.exit_code == 0, result.output
    assert result.output == "-: OK ('dummy-run', 2 phases)\n"

    bad = write_invalid_run_file(tmp_path).read_text(encoding="utf-8")
    result = runner().invoke(cli, ["start", "-"], input=bad, prog_name="palaestra")
    assert result.exit_code == 2
    assert f"Error: <stdin>:{BAD_LINE}: {BAD_KEY}: unknown key 'colour'" in result.stderr

    twice = runner().invoke(cli, ["check", "-", "-"], input=text, prog_name="palaestra")
    assert twice.exit_code == 2
    assert "'-' (the run file on standard input) can be given once" in twice.stderr


def test_check_syntax_needs_a_file() -> None:
    result = invoke(["check"])
    assert result.exit_code == 2
    assert "Missing argument" in result.output


# --- experiment-start on invalid input (no process is ever started) ----------------------------


@pytest.mark.parametrize("command", ["experiment-start", "start"])
def test_start_of_an_invalid_run_file_fails_in_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    bad = write_invalid_run_file(tmp_path)
    store = tmp_path / "store.db"
    run_dirs = tmp_path / "tmp"
    run_dirs.mkdir()
    # any run directory (palaestra.core.wire.transport.make_run_dir) would be made here
    monkeypatch.setattr(tempfile, "tempdir", str(run_dirs))
    children_before = multiprocessing.active_children()
    result = invoke([command, str(bad)], env={"PALAESTRA_STORE_URI": f"sqlite:///{store}"})
    assert result.exit_code == 2
    assert f"Error: {bad}:{BAD_LINE}: {BAD_KEY}: unknown key 'colour'" in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert multiprocessing.active_children() == children_before
    assert list(run_dirs.iterdir()) == []
    assert not store.exists()


# --- the store --------------------------------------------------------------------------------


def test_database_create_makes_the_tables(tmp_path: Path) -> None:
    store = tmp_path / "sub" / "store.db"
    uri = f"sqlite:///{store}"
    result = invoke(["database-create"], env={"PALAESTRA_STORE_URI": uri})
    assert result.exit_code == 0, result.output
    assert result.output == f"Store ready: {uri}\n"
    expected = set(METADATA.tables)
    assert {"experiments", "experiment_runs", "world_states", "brain_states"} <= expected
    assert sqlite_tables(store) >= expected
    # again: the existing tables are kept
    again = invoke(["database-create"], env={"PALAESTRA_STORE_URI": uri})
    assert again.exit_code == 0
    assert sqlite_tables(store) >= expected


def test_database_create_with_the_store_from_a_config_file(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path) as cwd:
        Path("rt.yaml").write_text("store_uri: sqlite:///configured.db\n")
        result = r.invoke(cli, ["-c", "rt.yaml", "database-create"])
        assert result.exit_code == 0, result.output
        assert sqlite_tables(Path(cwd) / "configured.db") >= set(METADATA.tables)


@pytest.mark.parametrize("command", ["experiment-list", "list"])
def test_experiment_list_on_an_empty_store(tmp_path: Path, command: str) -> None:
    env = {"PALAESTRA_STORE_URI": f"sqlite:///{tmp_path / 'store.db'}"}
    assert invoke(["database-create"], env=env).exit_code == 0
    result = invoke([command], env=env)
    assert result.exit_code == 0, result.output
    assert result.output == "No runs in the store.\n"


def test_experiment_list_on_a_missing_store_file_is_exit_3(tmp_path: Path) -> None:
    store = tmp_path / "missing" / "store.db"
    result = invoke(["experiment-list"], env={"PALAESTRA_STORE_URI": f"sqlite:///{store}"})
    assert result.exit_code == 3
    assert result.stderr.startswith(
        f"Error: store sqlite:///{store}: no such store file: {store}. Run palaestra in "
    )
    assert "relative to the working directory" not in result.stderr  # an absolute path
    assert "Traceback" not in result.output
    assert not store.exists()
    assert not store.parent.exists()


def test_experiment_list_on_the_default_missing_store_is_exit_3(tmp_path: Path) -> None:
    r = runner()
    with in_directory(tmp_path) as cwd:
        result = r.invoke(cli, ["experiment-list"])
        assert not (Path(cwd) / "palaestra.db").exists()
    assert result.exit_code == 3
    message = " ".join(result.stderr.split())  # as one line, however the terminal wraps it
    assert f"no such store file: palaestra.db (relative to the working directory {cwd})" in message
    assert "PALAESTRA_STORE_URI=sqlite:////abs/path/palaestra.db" in message
    assert "store_uri in a runtime config file given with -c FILE" in message


def test_experiment_list_on_a_store_without_tables_is_exit_3(tmp_path: Path) -> None:
    store = tmp_path / "empty.db"
    sqlite3.connect(store).close()
    result = invoke(["experiment-list"], env={"PALAESTRA_STORE_URI": f"sqlite:///{store}"})
    assert result.exit_code == 3
    assert "cannot read" in result.stderr
    assert "Traceback" not in result.output


def test_invalid_store_uri_is_exit_2(tmp_path: Path) -> None:
    """Invalid input, said as the runtime config is read (it was exit 3, "not a valid
    database URL", from SQLAlchemy)."""
    result = invoke(["database-create"], env={"PALAESTRA_STORE_URI": "not a url"})
    assert result.exit_code == 2
    assert "store_uri 'not a url' is no store URI; expected sqlite:///<file>" in result.stderr


def test_errors_are_red_on_a_terminal_only(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yml"
    plain = invoke(["experiment-check-syntax", str(missing)])
    coloured = runner().invoke(
        cli, ["experiment-check-syntax", str(missing)], prog_name="palaestra", color=True
    )
    assert plain.exit_code == coloured.exit_code == 2
    assert plain.stderr.startswith("Error: ") and "\x1b[" not in plain.stderr
    assert coloured.stderr.startswith("\x1b[31m\x1b[1mError:\x1b[0m ")


def test_where_to_look_names_the_config_given_and_a_store_turned_off(tmp_path: Path) -> None:
    from palaestra.cli.common import State, where_to_look

    config = tmp_path / "my runtime.yaml"
    config.write_text(f"store_uri: sqlite:///{tmp_path}/s.db\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        for name in CLEAN_ENV:
            mp.delenv(name, raising=False)
        lines = where_to_look(State(str(config), 0), "my run").splitlines()
        config.write_text("store_uri: none\n", encoding="utf-8")
        off = where_to_look(State(str(config), 0), "my run")
    assert lines == [
        f"Results are in the store sqlite:///{tmp_path}/s.db. Look at them with:",
        f"  palaestra -c '{config}' experiment-show 'my run'",
        f"  palaestra -c '{config}' results 'my run' --table episode_rewards -o rewards.csv",
        f"  palaestra -c '{config}' plot 'my run' -o curve.png",
    ]
    assert off == "Nothing was stored (store_uri is off)."


def test_each_command_found_elsewhere_is_one_of_its_modules_commands() -> None:
    """``ELSEWHERE`` names every command of the other modules, each with its own module, so a
    command imports only its own module (see test_executor_imports.py for what a run imports)."""
    import importlib

    from palaestra.cli.main import ELSEWHERE

    declared: dict[str, str] = {}
    for module in set(ELSEWHERE.values()):
        for command in importlib.import_module(f"palaestra.cli.{module}").COMMANDS:
            declared[command.name] = module
    assert declared == ELSEWHERE


def test_a_command_started_in_a_removed_directory_runs(tmp_path: Path) -> None:
    """The directory a command starts in, removed already: every command ended with a
    FileNotFoundError (noting the directory a relative store path leads from)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m palaestra runtime-config-show-default'
    done = subprocess.run(
        ["sh", "-c", script, sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("store_uri: ")
