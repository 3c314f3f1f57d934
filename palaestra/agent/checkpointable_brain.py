"""CheckpointableBrain: palaestrAI's protocol of a Brain whose whole state can be exported."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class CheckpointableBrain(Protocol):
    """A Brain that can export its complete state as bytes and restore it after ``setup()``.

    palaestrAI resumes a phase from such checkpoints; palaestra does not (a phase starts
    from brain dumps: :meth:`~palaestra.agent.brain.Brain.store` and ``load:``). The protocol
    is here so that Brains declaring it load and type-check unchanged, and
    ``isinstance(brain, CheckpointableBrain)`` tells whether a Brain offers it.

    Attributes:
        CHECKPOINT_FORMAT: The name of the payload's format, chosen by the Brain.
        CHECKPOINT_SCHEMA_VERSION: The version of that format.
    """

    CHECKPOINT_FORMAT: str
    CHECKPOINT_SCHEMA_VERSION: int

    def export_checkpoint_state(self) -> bytes:
        """The Brain's complete state, taken between updates."""
        ...

    def restore_checkpoint_state(self, payload: bytes) -> None:
        """Restore a state from :meth:`export_checkpoint_state`; leave the Brain unchanged
        if ``payload`` is refused."""
        ...
