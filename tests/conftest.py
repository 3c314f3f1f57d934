"""Shared fixtures: running the real CLI in a scratch directory, and checking for survivors."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from palaestra.core import procfs
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import muscle_action_values, world_state_values

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
PLUGINS = Path(__file__).resolve().parent / "plugins"

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # A shell starts a background job (``pytest &``, nohup) with SIGINT ignored, and every
    # command a test starts would inherit that: the tests of Ctrl-C would see it ignored. A
    # handler of Python's is reset to the default in an exec'd child.
    signal.signal(signal.SIGINT, signal.default_int_handler)


MLFLOWS_LOGGERS = ("mlflow", "alembic", "sqlalchemy.engine", "huey")
"""The loggers importing mlflow reconfigures (handlers, level, propagate) in its process."""


@contextlib.contextmanager
def mlflows_logging_kept() -> Iterator[None]:
    """Put back the loggers mlflow reconfigures when it is first imported inside: in ``palaestra
    export mlflow`` that ends with the command, in a test it would outlive the test (alembic's
    logs would no longer reach the root for the rest of the worker). mlflow must not be imported
    before (at collection, say), or its state is what is kept."""
    saved = {
        name: (logger.handlers[:], logger.level, logger.propagate)
        for name, logger in ((n, logging.getLogger(n)) for n in MLFLOWS_LOGGERS)
    }
    try:
        yield
    finally:
        for name, (handlers, level, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.handlers, logger.level, logger.propagate = handlers, level, propagate


def needs(module: str, reason: str) -> pytest.MarkDecorator:
    """Skip, saying ``reason``, where the top-level ``module`` is not installed, without
    importing it while the tests are collected (``pytest.importorskip`` at a module's top
    imported torch and Ray into every worker: 3 s of each one's collection, for tests of the
    slow run)."""
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=reason)


def sdist_cache() -> Path:
    """Where the source distributions the tests fetch (their run files) are kept between test
    sessions (``pip download`` of one takes about 10 s: it prepares the sdist's metadata):
    ``$PALAESTRA_TEST_CACHE``, else ``palaestra-tests`` in the user's cache folder."""
    given = os.environ.get("PALAESTRA_TEST_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "palaestra-tests"


def sdist(distribution: str, version: str, where: Path) -> Path:
    """``distribution`` ``version``'s source distribution (``.tar.gz``), fetched from the
    package index once and kept (:func:`sdist_cache`; where that cannot be written, fetched
    into ``where`` every time); skips, saying why, when it cannot be fetched (no network)."""
    stem = distribution.replace("-", "_")
    names = (f"{stem}-{version}.tar.gz", f"{distribution}-{version}.tar.gz")
    cache = sdist_cache()
    for name in names:
        kept = cache / name
        if kept.is_file():
            if _whole(kept):
                return kept
            kept.unlink(missing_ok=True)  # (damaged: fetched again)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        download = Path(tempfile.mkdtemp(dir=cache))
    except OSError:  # (a read-only home: no cache)
        cache, download = where, where
    try:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            + ["--ignore-requires-python"]  # the newest declare Python >= 3.12, run on 3.11
            + ["-d", str(download), f"{distribution}=={version}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        found = [download / n for n in names if (download / n).is_file()]
        if fetched.returncode != 0 or not found:
            pytest.skip(
                f"cannot fetch {distribution} {version}'s sdist from the package index: "
                f"{(fetched.stderr or fetched.stdout).strip()[-300:]}"
            )
        kept = cache / found[0].name
        os.replace(found[0], kept)  # (whole or not at all, for a test fetching beside it)
    finally:
        if download != where:
            shutil.rmtree(download, ignore_errors=True)
    return kept


def _whole(archive: Path) -> bool:
    """Whether ``archive`` reads to its end (a download cut short does not)."""
    try:
        with tarfile.open(archive) as tar:
            tar.getmembers()
    except (tarfile.TarError, EOFError, OSError):
        return False
    return True


def sdist_fixtures(distribution: str, version: str, names: list[str], where: Path) -> Path:
    """The files ``tests/fixtures/<name>`` of ``distribution`` ``version``'s source
    distribution (:func:`sdist`) extracted into ``where``; fails when it lacks one of them."""
    wanted = tuple(f"tests/fixtures/{name}" for name in names)
    with tarfile.open(sdist(distribution, version, where)) as tar:
        for member in tar.getmembers():
            if member.name.endswith(wanted):
                member.name = Path(member.name).name
                tar.extract(member, where, filter="data")
    missing = [name for name in names if not (where / name).exists()]
    assert not missing, f"the sdist of {distribution} {version} lacks {missing}"
    return where


@contextlib.contextmanager
def small_disk(directory: Path, size: str) -> Iterator[Path]:
    """``directory`` as a real filesystem of ``size`` (a tmpfs: ``1m``, ``16k``), unmounted
    after; the test is skipped where it cannot be mounted (it needs root)."""
    directory.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def session_processes(sessions: set[int]) -> list[tuple[int, str]]:
    """Live processes in one of ``sessions``: everything the test's commands started.

    Each command starts in a new session and every palaestra process inherits it (none calls
    setsid), so the session id finds them all, titled or not, even after the executor died.
    """
    return [found for session in sessions for found in procfs.in_session(session)]


def own_tmpdir(env: dict[str, str]) -> Path:
    """A temporary directory of its own for a command run with ``env`` (its ``TMPDIR``), with
    a short path (a socket's path has 107 bytes at most)."""
    path = Path(tempfile.mkdtemp(prefix="t-", dir="/tmp"))
    env["TMPDIR"] = str(path)
    return path


def files_left(path: Path) -> list[str]:
    """The files under ``path``, relative to it; ``path`` is then removed."""
    left = sorted(str(p.relative_to(path)) for p in path.rglob("*") if not p.is_dir())
    shutil.rmtree(path)
    return left


def niceness(pids: list[int]) -> dict[int, int]:
    """The niceness of each of ``pids`` that is still running, by pid."""
    found = {}
    for pid in pids:
        fields = procfs.stat(pid)
        if fields is not None:
            found[pid] = int(fields[procfs.NICE])
    return found


def wait_until_gone(sessions: set[int], timeout: float = 5.0) -> list[tuple[int, str]]:
    """Poll (bounded) until no process of ``sessions`` is left; returns the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_processes(sessions)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


PARAMETER_SET = type(pytest.param(None))


def slow_after(values: Any, keep: int = 1) -> list[Any]:
    """Parameters for ``pytest.mark.parametrize`` whose first ``keep`` run in the default
    suite and the rest only with ``-m slow`` (CI runs both): one case of a family keeps the
    feature covered in the quick run, the others are the long scenario."""
    marked = []
    for index, value in enumerate(values):
        if index < keep:
            marked.append(value)
        elif isinstance(value, PARAMETER_SET):  # a pytest.param already: one mark more
            marks = [*value.marks, pytest.mark.slow]
            marked.append(pytest.param(*value.values, marks=marks, id=value.id))
        elif isinstance(value, tuple):
            marked.append(pytest.param(*value, marks=pytest.mark.slow))
        else:
            marked.append(pytest.param(value, marks=pytest.mark.slow))
    return marked


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


Edit = tuple[str | re.Pattern[str], str]
"""A run-file edit: replace the first occurrence of a string or pattern."""


@dataclass
class Workspace:
    """A scratch directory to run ``palaestra`` in, with its own store."""

    path: Path
    sessions: set[int] = field(default_factory=set)

    @property
    def store(self) -> Path:
        return self.path / "palaestra.db"

    @property
    def store_uri(self) -> str:
        return f"sqlite:///{self.store}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), env.get("PYTHONPATH")]))
        env.pop("PALAESTRA_STORE_URI", None)
        env.pop("PALAESTRA_CPU_AFFINITY", None)  # (a test's runtime config says)
        return env

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """Start ``argv`` in the workspace, in a session of its own (found afterwards by
        :func:`session_processes`), its output piped; ``env`` defaults to :meth:`env`."""
        proc = subprocess.Popen(
            argv,
            cwd=self.path,
            env=self.env() if env is None else env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.sessions.add(proc.pid)
        return proc

    def start(self, *args: str) -> subprocess.Popen[str]:
        return self.spawn([sys.executable, "-m", "palaestra", *args])

    def variant(self, source: str, *edits: Edit) -> Path:
        """``experiments/<source>`` with each edit applied once (first occurrence), as a file
        in the workspace; an edit that does not apply fails the test."""
        text = (EXPERIMENTS / source).read_text()
        for old, new in edits:
            if isinstance(old, re.Pattern):
                text, found = old.subn(new, text, count=1)
                assert found, old.pattern
            else:
                assert old in text, old
                text = text.replace(old, new, 1)
        path = self.path / "variant.yml"
        path.write_text(text)
        return path

    def instance_status(self) -> tuple[str, str]:
        """Status and reason of the one run instance in the workspace's store."""
        with sqlite3.connect(self.store) as conn:
            (row,) = conn.execute("select status, reason from experiment_run_instances").fetchall()
        return (row[0], row[1])

    def processes(self) -> list[tuple[int, str]]:
        return session_processes(self.sessions)

    def run(self, *args: str, timeout: float = 60.0) -> Result:
        began = time.monotonic()
        code, out, err = finish(self.start(*args), timeout, f"palaestra {' '.join(args)}")
        return Result(code, out, err, time.monotonic() - began)


def finish(
    proc: subprocess.Popen[str], timeout: float, what: str = "the run"
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``proc``; the test fails (the process killed) when it
    has not ended within ``timeout`` seconds."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{what} did not end in {timeout} s:\n{err[-3000:]}")
    return proc.returncode, out, err


def wait_for_mark(path: Path, proc: subprocess.Popen[str], timeout: float) -> None:
    """Poll (bounded) until a run's plug-in writes the mark file ``path``; the test fails if
    the run ends first or the mark does not come within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path.name} did not appear in {timeout} s"
        time.sleep(0.05)


def step_rows(store: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The ``world_states`` and ``muscle_actions`` rows of a SQLite store, without their ids
    and times, in a fixed order: what two runs of the same experiment must agree on."""
    with sqlite3.connect(store) as conn:
        states = conn.execute(
            "SELECT worker, episode, step, sensors, setpoints, rewards, done FROM world_states "
            "ORDER BY environment_id, worker, episode, step"
        ).fetchall()
        actions = conn.execute(
            "SELECT agent_id, worker, episode, step, sensor_readings, actuator_setpoints, rewards "
            "FROM muscle_actions ORDER BY agent_id, worker, episode, step"
        ).fetchall()
    return states, actions


def env_hiding(ws: Workspace, module: str) -> dict[str, str]:
    """``ws.env()`` in which ``module`` looks not installed, to every process of a run (started
    by fork, forkserver or spawn alike): a package of its name that raises what Python raises
    for a missing module comes first on ``PYTHONPATH``."""
    shadow = ws.path / "hidden" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        f'raise ModuleNotFoundError("No module named {module!r}", name={module!r})\n'
    )
    env = ws.env()
    env["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), env["PYTHONPATH"]])
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """A scratch directory; afterwards, no process of the test's runs may survive."""
    ws = Workspace(tmp_path)
    yield ws
    survivors = wait_until_gone(ws.sessions)
    for pid, _ in survivors:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert not survivors, f"processes survived the test: {survivors}"


# --- PostgreSQL ---------------------------------------------------------------------------

LOCAL_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ASKED_FOR_POSTGRES = os.environ.get("PALAESTRA_TEST_POSTGRES")
"""The server the PostgreSQL tests must use (CI sets it), or None: the local one, if any."""


def postgres_admin(asked: str | None, answers: Callable[[str], str | None]) -> str:
    """The admin URL of the PostgreSQL server for the tests, or a skip saying why there is none.

    ``asked`` is ``PALAESTRA_TEST_POSTGRES``: a server asked for must answer (a failure
    otherwise, not a skip); an empty value skips the tests. Unset, the local server
    (:data:`LOCAL_POSTGRES`) is used when it answers, and the tests skip when it does not.
    ``answers`` returns None for a server that answers, else the reason it does not.
    """
    if asked == "":
        pytest.skip("PostgreSQL tests turned off (PALAESTRA_TEST_POSTGRES is empty)")
    why = answers(asked or LOCAL_POSTGRES)
    if why is None:
        return asked or LOCAL_POSTGRES
    if asked:
        pytest.fail(f"PALAESTRA_TEST_POSTGRES={asked}: the server does not answer: {why}")
    pytest.skip(
        f"no PostgreSQL server answers at {LOCAL_POSTGRES} ({why}); set "
        "PALAESTRA_TEST_POSTGRES to a server's URL to run these tests"
    )


def _conninfo(admin: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(admin).set(drivername="postgresql").render_as_string(hide_password=False)


@functools.cache
def server_answers(admin: str) -> str | None:
    """None if the server of ``admin`` takes a connection (asked once per test session), else
    the reason it did not."""
    import psycopg

    try:
        with psycopg.connect(_conninfo(admin), connect_timeout=5):
            return None
    except psycopg.OperationalError as exc:
        return " ".join(str(exc).split()) or type(exc).__name__


@pytest.fixture
def pg_uri() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test only, dropped afterwards.

    The server: see :func:`postgres_admin` (``PALAESTRA_TEST_POSTGRES``, an SQLAlchemy URL to a
    database the tests may create databases from).
    """
    import psycopg
    from sqlalchemy.engine import make_url

    admin_uri = postgres_admin(ASKED_FOR_POSTGRES, server_answers)
    admin = make_url(admin_uri)
    conninfo = _conninfo(admin_uri)
    name = f"palaestra_t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(drivername="postgresql+psycopg", database=name).render_as_string(
            hide_password=False
        )
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- the command line in-process ------------------------------------------------------------


def cli_runner(env: dict[str, str | None] | None = None) -> Any:
    """A click ``CliRunner`` that keeps stderr apart from stdout on every click this project
    installs: click 8.2 always does; click 8.1 (which palaestrAI pins, so the ``palaestrai``
    extra brings it) needs ``mix_stderr=False``."""
    import inspect

    from click.testing import CliRunner

    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(env=env, mix_stderr=False)
    return CliRunner(env=env)


def world_message(environment_id: int, worker: int, rows: list[m.WorldStateRow]) -> m.Rows:
    """What an environment process sends the store writer for ``rows``."""
    shaped = [world_state_values(environment_id, worker, row) for row in rows]
    return m.Rows(table="world_states", rows=shaped)


def actions_message(agent_id: int, worker: int, rows: list[m.MuscleActionRow]) -> m.Rows:
    """What a Muscle process sends the store writer for ``rows``."""
    shaped = [muscle_action_values(agent_id, worker, row) for row in rows]
    return m.Rows(table="muscle_actions", rows=shaped)
