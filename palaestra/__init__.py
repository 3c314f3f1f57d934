"""palaestra: a training ground for autonomous agents.

``palaestra.run`` and ``palaestra.sweep`` (:mod:`palaestra.experiment.api`) are imported on
first use, so ``import palaestra`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from palaestra.version import __version__

__all__ = ["__version__", "run", "sweep"]

if TYPE_CHECKING:
    from palaestra.experiment.api import run, sweep


def __getattr__(name: str) -> Any:
    if name in ("run", "sweep"):
        from palaestra.experiment import api

        return getattr(api, name)
    raise AttributeError(f"module 'palaestra' has no attribute {name!r}")
