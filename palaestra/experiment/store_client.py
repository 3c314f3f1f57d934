"""How the ExperimentRun talks to the store: the StoreWriter process, or no store at all.

With ``store_uri: none`` nothing is recorded (for quick trials and for measuring what storing
costs); brain dumps are still written as files, and a later phase finds its dump there.

Every request to the writer is bounded (``store_timeout``): a writer that does not answer in
time fails the run, named, with what could be found out about why (stopped, the store locked
by another connection, or simply stuck).
"""

from __future__ import annotations

import glob
import os
import sqlite3
from typing import Any

from palaestra.core import liveness
from palaestra.core.description.config import NO_STORE
from palaestra.core.description.name_rules import check_inside, dump_file_name, path_part
from palaestra.core.description.names import WRITER
from palaestra.core.errors import EXIT_RUN_FAILED, EXIT_STORE_UNUSABLE
from palaestra.core.procfs import state
from palaestra.core.supervision.runtime import ComponentFailed, Runtime
from palaestra.core.wire import messages as m

__all__ = ["WRITER", "NullStore", "WriterClient", "dump_dir", "store_enabled", "writer_stuck"]


def store_enabled(store_uri: str) -> bool:
    return store_uri.strip().lower() not in NO_STORE


def dump_dir(data_path: str, run_uid: str, instance_uid: str, index: int, phase: str) -> str:
    """Where the brains of one phase of one run instance write their dump files.

    Every part is a safe path component (:func:`~palaestra.core.description.name_rules.path_part`),
    and the result is checked to resolve inside ``data_path``.

    Raises:
        UnsafePathError: The directory would resolve outside ``data_path`` (a symbolic link).
    """
    path = os.path.join(
        data_path,
        "brain_dumps",
        path_part(run_uid),
        path_part(instance_uid),
        f"{index}-{path_part(phase)}",
    )
    return check_inside(path, data_path)


class WriterClient:
    """Requests answered by the StoreWriter child process, each within ``timeout`` seconds.

    Args:
        runtime: The executor's runtime; the writer is its child.
        store_uri: The store the writer writes (to find out why it is stuck).
        timeout: Seconds the writer may take to answer one request (``store_timeout``).
    """

    def __init__(self, runtime: Runtime, store_uri: str, timeout: float) -> None:
        self.runtime = runtime
        self.store_uri = store_uri
        self.timeout = timeout
        self.unresponsive = False
        """True once the writer let a request time out: it is not asked again."""

    async def ask(self, request: m.Msg) -> Any:
        try:
            async with liveness.seen_timeout(self.timeout):
                return await self.runtime.request(WRITER, request)
        except TimeoutError:
            self.unresponsive = True
            raise self.stuck(type(request).__name__) from None

    def stuck(self, request: str) -> ComponentFailed:
        """The error for a writer that did not answer ``request`` in time, with the cause."""
        writer = self.runtime.supervisor.children.get(WRITER)
        why, code = writer_stuck(writer.pid if writer else None, self.store_uri)
        what = f"did not answer {request} within {self.timeout:g} s"
        return ComponentFailed(
            m.ErrorInfo(
                process=WRITER,
                kind="StoreTimeout",
                message=f"{WRITER} {what} (store_timeout is {self.timeout:g} s): {why}",
                run_exit_code=code,
            )
        )


def writer_stuck(pid: int | None, store_uri: str) -> tuple[str, int]:
    """Why a writer process does not answer, as far as can be seen from outside, and the exit
    code that gives the run (3 where the store is the problem)."""
    if pid is not None and state(pid) in ("T", "t"):
        return "the process is stopped (SIGSTOP, or a debugger holds it)", EXIT_RUN_FAILED
    locked = _sqlite_locked(store_uri)
    if locked:
        return f"the store is locked by another connection ({locked})", EXIT_STORE_UNUSABLE
    return "it is busy or stuck (the store may be slow or unreachable)", EXIT_RUN_FAILED


def _sqlite_locked(store_uri: str) -> str:
    """The SQLite error a write transaction on the store meets at once ("" if none)."""
    from sqlalchemy.engine import make_url

    from palaestra.store.engine import NOT_A_URL

    try:
        url = make_url(store_uri)
    except NOT_A_URL:
        return ""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return ""
    try:
        conn = sqlite3.connect(url.database, timeout=0.2)
    except sqlite3.Error:
        return ""
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.rollback()
    except sqlite3.OperationalError as exc:
        return str(exc)
    finally:
        conn.close()
    return ""


class NullStore:
    """Answers store requests without a store; finds brain dumps among the dump files."""

    def __init__(self, data_path: str) -> None:
        self.data_path = data_path

    async def ask(self, request: m.Msg) -> Any:
        if isinstance(request, m.StoreRunStart):
            return m.StoreIds(ids={"experiment": 0, "run": 0, "instance": 0})
        if isinstance(request, m.StorePhaseStart):
            ids = {"phase": 0}
            ids.update({f"environment:{e.uid}": 0 for e in request.environments})
            ids.update({f"agent:{a.name}": 0 for a in request.agents})
            return m.StoreIds(ids=ids)
        if isinstance(request, m.StoreFindDump):
            return self._find_dump(request)
        return m.StoreAck()

    def _find_dump(self, request: m.StoreFindDump) -> m.StoreDump:
        """The agent's dump files in the phase's directory of the asking instance (its own
        run), else of the newest instance that has any: the newest of each tag, by
        :func:`~palaestra.core.description.name_rules.dump_key`."""
        phases = os.path.join(
            glob.escape(os.path.abspath(os.path.join(self.data_path, "brain_dumps"))),
            glob.escape(path_part(request.run_uid)),
            glob.escape(path_part(request.instance_uid)) if request.instance_uid else "*",
            f"{request.phase}-*",
        )
        agent = path_part(request.agent)
        by_directory: dict[str, dict[str, str]] = {}
        for pattern in (dump_file_name(request.agent), f"{agent}-*.bin"):
            for path in glob.glob(os.path.join(phases, pattern)):  # safe parts: no [*?]
                key = _file_key(os.path.basename(path), agent)
                if key is not None:
                    by_directory.setdefault(os.path.dirname(path), {})[key] = path
        if not by_directory:
            return m.StoreDump(brain_state_id=None, dumps={})
        newest = max(by_directory.values(), key=lambda f: max(map(os.path.getmtime, f.values())))
        dumps = {}
        for key, path in newest.items():
            with open(path, "rb") as f:
                dumps[key] = f.read()
        return m.StoreDump(brain_state_id=None, dumps=dumps)


def _file_key(name: str, agent: str) -> str | None:
    """The dump key of a dump file of ``agent`` (its path part) named ``name``, or None if
    the name is not one."""
    if name == f"{agent}.bin":
        return ""
    if not (name.startswith(f"{agent}-") and name.endswith(".bin")):
        return None
    return name[len(agent) + 1 : -len(".bin")] or None
