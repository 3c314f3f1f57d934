"""What the executor needs to spawn the store writer, without importing it.

A spec is pickled down to its child, which imports each class the pickle names while it
unpickles it: :class:`WriterArgs` lives here, in a module that imports nothing heavy, so that
the writer's start does not import the run's machinery (agents, numpy) it never uses.
"""

from __future__ import annotations

import msgspec

from palaestra.core.supervision.processes import Deferred

STORE_WRITER = Deferred("palaestra.store.writer:StoreWriter")
"""The writer's class, imported in its own process only (it imports SQLAlchemy)."""


class WriterArgs(msgspec.Struct, frozen=True, kw_only=True):
    """The arguments of :class:`palaestra.store.writer.StoreWriter`, besides its name."""

    store_uri: str
    priority: str = "normal"
    """The runtime config's ``writer_priority`` (``background``: see
    :func:`palaestra.core.supervision.affinity.to_background`)."""
