"""Fixtures for the tests against palaestrAI's published plug-in packages.

The tests here need ``palaestra[palaestrai]`` (torch, palaestrai-agents' ``harl``,
palaestrai-environments, gymnasium); without them they skip, saying which is missing, so the
default suite stays green.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from types import ModuleType

import pytest

PUBLISHED = ("torch", "harl", "palaestrai_environments", "gymnasium")
"""The packages of the ``palaestrai`` extra, by import name."""


def require_published() -> None:
    """Skip the calling test unless every package of the ``palaestrai`` extra is installed.

    Checked without importing them: importing ``harl`` imports ``palaestrai``, which must be
    palaestra's mapping (see :func:`harl_modules`), not the real distribution.
    """
    missing = [name for name in PUBLISHED if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"needs palaestrAI's published packages ({', '.join(missing)} not importable): "
            "pip install -e '.[palaestrai]'"
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
