"""NoneBrain: the Brain of an agent that does not learn (a scripted Muscle, say)."""

from __future__ import annotations

from typing import Any

from palaestra.agent.brain import Brain


class NoneBrain(Brain):
    """Answers every Muscle with no update, stores no dump and loads none.

    For agents whose whole behaviour is in their Muscle: the Muscle still gets its answer
    (``None``) each step, so it acts at once.
    """

    def __init__(self, **params: Any) -> None:
        self.params = params

    def thinking(self, muscle_id: str, data_from_muscle: Any) -> None:
        return None

    def store(self) -> None:
        """Nothing to keep."""

    def load(self) -> None:
        """Nothing to restore."""
