"""Fixtures for the tests against palaestrAI's published plug-in packages.

The tests here need ``palaestra[palaestrai]`` (torch, palaestrai-agents' ``harl``,
palaestrai-environments, gymnasium); without them they skip, saying which is missing, so the
default suite stays green.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

PUBLISHED = ("torch", "harl", "palaestrai_environments", "gymnasium")
"""The packages of the ``palaestrai`` extra, by import name."""


PUBLISHED_VENV = (
    "a virtualenv of their own (palaestrAI pins older click, pandas and pyzmq): python3 -m venv "
    ".venv-palaestrai && .venv-palaestrai/bin/pip install -e '.[test,palaestrai]' && "
    ".venv-palaestrai/bin/python -m pytest tests/published"
)
"""Where docs/development.md installs them (what a skip says)."""


def require_published() -> None:
    """Skip the calling test unless every package of the ``palaestrai`` extra is installed.

    Checked without importing them: importing ``harl`` imports ``palaestrai``, which must be
    palaestra's mapping (see :func:`harl_modules`), not the real distribution.
    """
    missing = [name for name in PUBLISHED if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"needs palaestrAI's published packages ({', '.join(missing)} not importable), in "
            f"{PUBLISHED_VENV}"
        )


@pytest.fixture
def torch_with_harl() -> Iterator[ModuleType]:
    """torch, with harl importable in this process so that ``torch.load`` can unpickle its
    networks; harl's ``palaestrai`` imports map to palaestra (the finder is removed after)."""
    require_published()
    from palaestra import compat

    was_installed = compat.installed()
    compat.install()
    try:
        import harl  # noqa: F401  (the networks' classes, for unpickling)
        import torch

        yield torch
    finally:
        if not was_installed:
            compat.uninstall()


def sdist_fixtures(distribution: str, names: list[str], where: Path) -> Path:
    """The files ``tests/fixtures/<name>`` of the installed ``distribution``'s source
    distribution, fetched from the package index into ``where``; skips, saying why, when it
    cannot be fetched (no network), and fails when the sdist lacks one of them."""
    version = importlib.metadata.version(distribution)
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        + ["--ignore-requires-python"]  # the newest declare Python >= 3.12 and run on 3.11
        + ["-d", str(where), f"{distribution}=={version}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    stem = distribution.replace("-", "_")
    archives = list(where.glob(f"{stem}-*.tar.gz")) + list(where.glob(f"{distribution}-*.tar.gz"))
    if fetched.returncode != 0 or not archives:
        pytest.skip(
            f"cannot fetch {distribution} {version}'s sdist from the package index: "
            f"{(fetched.stderr or fetched.stdout).strip()[-300:]}"
        )
    wanted = tuple(f"tests/fixtures/{name}" for name in names)
    with tarfile.open(archives[0]) as tar:
        for member in tar.getmembers():
            if member.name.endswith(wanted):
                member.name = Path(member.name).name
                tar.extract(member, where, filter="data")
    missing = [name for name in names if not (where / name).exists()]
    assert not missing, f"the sdist of {distribution} {version} lacks {missing}"
    return where
