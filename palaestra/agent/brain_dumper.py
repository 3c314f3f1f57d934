"""palaestrAI-style static helpers for brain dumps, for brains and muscles ported from palaestrAI.

``BrainDumper.store_brain_dump(bio, self._dumpers, tag)`` in a Brain's ``store`` and
``BrainDumper.load_brain_dump(self._dumpers, tag)`` in its ``load`` (or with a Muscle's
``self._model_loaders`` in its ``prepare_model``) work as in palaestrAI: a stream is stored
whole wherever it is positioned, and a load returns the newest dump of that tag, positioned at
its start, or None.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import BinaryIO

from palaestra.agent.context import BrainDumps


class BrainDumper:
    """``BrainDumper.store_brain_dump(f, self._dumpers, tag)`` and ``load_brain_dump(...)``."""

    @staticmethod
    def store_brain_dump(
        data: bytes | BinaryIO, dumpers: BrainDumps | Iterable[BrainDumps], tag: str | None = ""
    ) -> None:
        for dumper in _each(dumpers):
            dumper.store(data, tag)

    @staticmethod
    def load_brain_dump(
        dumpers: BrainDumps | Iterable[BrainDumps], tag: str | None = ""
    ) -> BinaryIO | None:
        for dumper in _each(dumpers):
            data = dumper.load(tag)
            if data is not None:
                return io.BytesIO(data)
        return None


def _each(dumpers: BrainDumps | Iterable[BrainDumps]) -> list[BrainDumps]:
    """palaestrAI passes a list of dumpers; palaestra's ``_dumpers`` is one."""
    return [dumpers] if isinstance(dumpers, BrainDumps) else list(dumpers)
