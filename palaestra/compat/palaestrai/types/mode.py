"""``palaestrai.types.mode``: the mode of a phase, palaestrAI's ``Mode`` enum.

palaestra passes a plug-in's ``mode`` as the string ``"train"`` or ``"test"``; this Mode is
also a string, so ``self.mode == Mode.TRAIN`` holds in palaestra as it does in palaestrAI.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Mode"]


class Mode(StrEnum):
    """``TRAIN``, ``TEST`` or ``EVALUATE``; each equal to its lower-case name."""

    TRAIN = "train"
    TEST = "test"
    EVALUATE = "evaluate"
