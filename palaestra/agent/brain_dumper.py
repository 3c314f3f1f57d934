"""palaestrAI-style static helpers for brain dumps, for brains ported from palaestrAI."""

from __future__ import annotations

import io
from typing import BinaryIO

from palaestra.agent.context import BrainDumps


class BrainDumper:
    """``BrainDumper.store_brain_dump(f, self._dumpers)`` and ``load_brain_dump(...)``."""

    @staticmethod
    def store_brain_dump(data: bytes | BinaryIO, dumpers: BrainDumps, tag: str = "") -> None:
        dumpers.store(data, tag)

    @staticmethod
    def load_brain_dump(dumpers: BrainDumps, tag: str = "") -> BinaryIO | None:
        data = dumpers.load()
        return None if data is None else io.BytesIO(data)
