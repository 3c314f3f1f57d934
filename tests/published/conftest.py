"""Fixtures for the tests against palaestrAI's published plug-in packages.

The tests here need ``palaestra[palaestrai]`` (torch, palaestrai-agents' ``harl``,
palaestrai-environments, gymnasium); without them they skip, saying which is missing, so the
default suite stays green.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import sdist_fixtures as fetched_fixtures

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
    distribution in ``where`` (see :func:`tests.conftest.sdist_fixtures`)."""
    version = importlib.metadata.version(distribution)
    return fetched_fixtures(distribution, version, names, where)
