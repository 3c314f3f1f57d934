"""The ``brain_memory`` and ``muscle_memory`` keys of a run file's agents.

Each is a mapping ``{rows: 100000, bytes: 256MiB}`` (either key may be left out, keeping its
default); ``bytes`` is an integer or a string with a unit (``kB``, ``MB``, ``GB``, ``KiB``,
``MiB``, ``GiB``), or null for no byte bound.
"""

from __future__ import annotations

import re

from palaestra.core.description.specs import MemoryLimits
from palaestra.experiment.runfile_schema import Node, as_int, as_mapping, describe

_KEYS = ("rows", "bytes")
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def memory_limits(node: Node | None, default: MemoryLimits) -> MemoryLimits:
    """Return the limits a ``brain_memory``/``muscle_memory`` node sets, ``default`` where it
    sets none."""
    if node is None:
        return default
    fields = as_mapping(node, allowed=_KEYS)
    rows = as_int(fields["rows"], minimum=1) if "rows" in fields else default.rows
    size = default.bytes
    if "bytes" in fields:
        size = None if fields["bytes"].value is None else as_bytes(fields["bytes"])
    return MemoryLimits(rows=rows, bytes=size)


def as_bytes(node: Node) -> int:
    """Check that ``node`` is a size in bytes (at least 1 KiB) and return it."""
    value = node.value
    size: float | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (match := _SIZE.fullmatch(value)):
        unit = _UNITS.get(match.group(2).lower())
        size = float(match.group(1)) * unit if unit is not None else None
    if size is None or size < 1024:
        node.fail(
            f"expected a size in bytes of at least 1 KiB, got {describe(value)}.",
            "Write an integer or a number with a unit: 64MiB, 1.5GB, 500kB.",
        )
    return int(size)
