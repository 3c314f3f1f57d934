"""How the ExperimentRun talks to the store: the StoreWriter process, or no store at all.

With ``store_uri: none`` nothing is recorded (for quick trials and for measuring what storing
costs); brain dumps are still written as files, and a later phase finds its dump there.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from palaestra.core import messages as m
from palaestra.core.name_rules import check_inside, dump_file_name, path_part

WRITER = "StoreWriter"
NO_STORE = ("", "none", "off")


def store_enabled(store_uri: str) -> bool:
    return store_uri.strip().lower() not in NO_STORE


def dump_dir(data_path: str, run_uid: str, instance_uid: str, index: int, phase: str) -> str:
    """Where the brains of one phase of one run instance write their dump files.

    Every part is a safe path component (:func:`~palaestra.core.name_rules.path_part`), and the
    result is checked to resolve inside ``data_path``.

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
    """Requests answered by the StoreWriter child process."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    async def ask(self, request: m.Msg) -> Any:
        return await self.runtime.request(WRITER, request)


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
        pattern = os.path.join(
            glob.escape(os.path.abspath(os.path.join(self.data_path, "brain_dumps"))),
            glob.escape(path_part(request.run_uid)),
            "*",
            f"{request.phase}-*",
            glob.escape(dump_file_name(request.agent)),
        )
        files = sorted(glob.glob(pattern), key=os.path.getmtime)
        if not files:
            return m.StoreDump(brain_state_id=None, dump=None)
        with open(files[-1], "rb") as f:
            return m.StoreDump(brain_state_id=None, dump=f.read())
