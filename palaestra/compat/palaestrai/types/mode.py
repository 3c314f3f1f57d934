"""``palaestrai.types.mode``: the mode of a phase, palaestra's :class:`~palaestra.core.mode.Mode`.

It is a string enum, so ``self.mode == Mode.TRAIN`` and ``self.mode == "train"`` both hold.
"""

from __future__ import annotations

from palaestra.core.mode import Mode

__all__ = ["Mode"]
