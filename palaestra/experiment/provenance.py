"""What a run ran with: package versions and the code revision, recorded with each instance."""

from __future__ import annotations

import os
import subprocess

PACKAGES = ("palaestra", "numpy", "pyzmq", "msgspec", "sqlalchemy", "aiomultiprocess")


def package_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Installed versions of palaestra's own dependencies and of ``extra`` distributions."""
    import importlib.metadata  # (16 ms: imported while the store writer starts, not before)

    versions = {}
    for name in (*PACKAGES, *extra):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def code_revision(path: str) -> str | None:
    """The git commit of the repository holding ``path`` (``+dirty`` if modified), or None."""
    where = os.path.dirname(os.path.abspath(path)) or "."
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head
