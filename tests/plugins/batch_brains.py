"""Brains for the tests of batched Brain input (see tests/system/test_brain_batches.py).

:class:`SlowFirstBrain` is DummyBrain whose first ``thinking`` call takes a second (a slow
first forward pass, say), so that the Muscles of the other workers send their messages
meanwhile and the Brain finds several pending at once. :class:`BatchBrain` adds a
``thinking_batch`` that records each batch's size as a statistic (``batch``) and thinks as
DummyBrain does, message by message. :class:`ShortBatchBrain` answers a batch with too few
updates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from palaestra.agent import DummyBrain

FIRST_CALL_SECONDS = 1.0


class SlowFirstBrain(DummyBrain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        if self.thinking_calls == self.loaded_calls:  # the first call of the phase
            time.sleep(FIRST_CALL_SECONDS)
        return super().thinking(muscle_id, data_from_muscle)


class BatchBrain(SlowFirstBrain):
    def thinking_batch(self, experiences: Sequence[tuple[str, Any]]) -> Sequence[Any]:
        self.add_statistics("batch", len(experiences))
        return [self.thinking(muscle_id, data) for muscle_id, data in experiences]


class ShortBatchBrain(SlowFirstBrain):
    def thinking_batch(self, experiences: Sequence[tuple[str, Any]]) -> Sequence[Any]:
        return [None]
