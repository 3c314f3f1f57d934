"""The mode of a phase, as a plug-in sees it: :class:`Mode`, a str-valued enum."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """Whether a phase trains its agents or tests them.

    The members are strings, so ``mode == "train"`` and ``mode == Mode.TRAIN`` both hold, a
    mode hashes like its string and msgpack/JSON carry it as one. palaestrAI's
    ``palaestrai.types.Mode`` has the same members with the same values (``EVALUATE`` is kept
    for plug-ins that name it; run files know ``train`` and ``test``).
    """

    TRAIN = "train"
    TEST = "test"
    EVALUATE = "evaluate"
