"""DummyBrain: a brain that learns nothing but exercises every part of the Brain contract."""

from __future__ import annotations

import json
from typing import Any

from palaestra.agent.brain import Brain


class DummyBrain(Brain):
    """Answers each Muscle with ``data_from_muscle + 1`` (0 for None) and counts its calls.

    Its dump is JSON ``{"value": ..., "thinking_calls": ...}``; ``thinking_calls`` carries over
    from a loaded dump, so a later phase shows that it started from an earlier one.
    """

    def __init__(self, **params: Any) -> None:
        self.params = params
        self.value = 0
        self.thinking_calls = 0
        self.loaded_calls = 0

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        self.thinking_calls += 1
        self.value = data_from_muscle + 1 if data_from_muscle is not None else 0
        return self.value

    def store(self) -> None:
        state = {"value": self.value, "thinking_calls": self.thinking_calls}
        self.store_brain_dump(json.dumps(state).encode())

    def load(self) -> None:
        dump = self.load_brain_dump()
        if dump is None:
            return
        state = json.loads(dump.read())
        self.value = int(state["value"])
        self.thinking_calls = self.loaded_calls = int(state["thinking_calls"])
