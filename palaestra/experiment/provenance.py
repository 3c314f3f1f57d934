"""What a run ran with: package versions and the code revision, recorded with each instance.

Both are found while the run starts, on its critical path: the versions are read from the
names of the packages' ``.dist-info`` directories (about 1 ms, where ``importlib.metadata`` took
30), and the two git commands of the revision run side by side while the run does other work.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

PACKAGES = ("palaestra", "numpy", "pyzmq", "msgspec", "sqlalchemy", "aiomultiprocess")
GIT_TIMEOUT = 5.0
"""Seconds each git command may take."""
REVISION_MAX = 64
"""The longest code revision the store keeps (``experiment_run_instances.code_revision``, a
``VARCHAR(64)``: PostgreSQL refuses a longer one, SQLite keeps it)."""
DIRTY = "+dirty"


def package_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Installed versions of palaestra's own dependencies and of ``extra`` distributions: the
    first of each on ``sys.path``, as ``importlib.metadata`` finds them (which is asked for a
    distribution installed without a ``<name>-<version>.dist-info`` directory)."""
    wanted = {_normal(name): name for name in (*PACKAGES, *extra)}
    versions = _dist_info_versions(wanted)
    missing = [name for name in wanted.values() if name not in versions]
    if missing:  # (an egg-info, say: its version is in its files)
        import importlib.metadata

        for name in missing:
            try:
                versions[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
    return {name: versions[name] for name in wanted.values() if name in versions}


def _dist_info_versions(wanted: dict[str, str]) -> dict[str, str]:
    """The versions that the first ``<name>-<version>.dist-info`` of each wanted distribution
    (by :func:`_normal` name) on ``sys.path`` names."""
    versions: dict[str, str] = {}
    for entry in sys.path:
        try:
            items = os.listdir(entry or ".")
        except OSError:
            continue
        for item in items:
            if not item.endswith(".dist-info"):
                continue
            name, _, version = item.removesuffix(".dist-info").partition("-")
            found = wanted.get(_normal(name))
            if found is not None and found not in versions and version:
                versions[found] = version
    return versions


def _normal(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


class CodeRevision:
    """The git commit of the repository holding ``path`` (``+dirty`` if modified), found by
    two git commands started at once; :meth:`result` waits for them. A SHA-256 repository's
    commit (64 hex digits) is cut to its first 58 before ``+dirty``, so the revision fits the
    store's column (:data:`REVISION_MAX`); git takes such a prefix for the commit."""

    def __init__(self, path: str) -> None:
        where = os.path.dirname(os.path.abspath(path)) or "."
        commands = (
            ["git", "-C", where, "rev-parse", "HEAD"],
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
        )
        self.running: list[subprocess.Popen[str]] = []
        try:
            for command in commands:
                self.running.append(
                    subprocess.Popen(
                        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
                    )
                )
        except OSError:  # (no git)
            self._end()

    def result(self) -> str | None:
        """The revision, or None (no git, not a repository, a command that hung)."""
        try:
            said = [process.communicate(timeout=GIT_TIMEOUT)[0] for process in self.running]
        except subprocess.TimeoutExpired:
            said = []
        ok = len(said) == 2 and all(process.returncode == 0 for process in self.running)
        self._end()
        if not ok:
            return None
        head, dirty = (text.strip() for text in said)
        if dirty:
            return f"{head[: REVISION_MAX - len(DIRTY)]}{DIRTY}"
        return head[:REVISION_MAX]

    def _end(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.kill()
            process.communicate()
        self.running = []
