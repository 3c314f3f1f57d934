"""``palaestrai.types.simtime``: palaestra's :class:`~palaestra.core.simtime.SimTime`."""

from __future__ import annotations

from palaestra.core.simtime import SimTime

__all__ = ["SimTime"]
