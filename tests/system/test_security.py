"""Nothing of a run is reachable from the network, and its sockets live in a private directory."""

from __future__ import annotations

import os
import signal
import stat
import time

import pytest

from tests.conftest import EXPERIMENTS, Workspace

pytestmark = pytest.mark.timeout(60)


def listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    inodes.add(fields[9])
    return inodes


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    except OSError:
        pass
    return inodes


def ipc_dir_mode(name: str) -> int | None:
    """The permission bits of ``/tmp/name`` if it is a run's directory with a socket in it
    (None if not: another file of that name, or one that went away meanwhile)."""
    if not name.startswith("palaestra-"):
        return None
    path = os.path.join("/tmp", name)
    try:
        if not any(f.endswith(".sock") for f in os.listdir(path)):
            return None
        return stat.S_IMODE(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def test_no_process_of_a_run_listens_on_tcp(workspace: Workspace) -> None:
    text = (
        (EXPERIMENTS / "multiworker_run.yml")
        .read_text()
        .replace("max_iter: 20", "max_iter: 1000000")
    )
    run_file = workspace.path / "long.yml"
    run_file.write_text(text)
    proc = workspace.start("experiment-start", str(run_file))
    deadline = time.monotonic() + 30
    titles: set[str] = set()
    while time.monotonic() < deadline and not {"Brain-learner", "Muscle-learner-1"} <= titles:
        titles = {
            cmd[len("palaestra[") : -1]
            for _, cmd in workspace.processes()
            if cmd.startswith("palaestra[")
        }
    assert {"Brain-learner", "Muscle-learner-1", "StoreWriter"} <= titles
    processes = workspace.processes()
    ours = set().union(*(socket_inodes(pid) for pid, _ in processes))
    assert ours, "the run's processes hold no sockets at all?"
    assert not ours & listening_tcp_inodes()
    # the ipc endpoints of every run live in a directory only its user may enter (other tests'
    # runs end meanwhile: a directory gone between two looks is theirs, and left out)
    modes = [mode for mode in map(ipc_dir_mode, os.listdir("/tmp")) if mode is not None]
    assert modes and all(mode == 0o700 for mode in modes)
    os.kill(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
