"""A Brain that also stores a dump under a tag of its choice (palaestrAI's ``tag`` argument)."""

from __future__ import annotations

from typing import Any

from palaestra.agent import DummyBrain


class TaggingBrain(DummyBrain):
    """A DummyBrain whose ``store`` first writes a dump tagged with the ``tag`` parameter."""

    def __init__(self, tag: str = "", **params: Any) -> None:
        super().__init__(**params)
        self.tag = tag

    def store(self) -> None:
        self.store_brain_dump(b"tagged", tag=self.tag)
        super().store()  # the newest dump, the one the next phase loads
