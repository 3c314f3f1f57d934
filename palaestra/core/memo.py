"""A bounded memo for the values a hot path makes again and again (rows' JSON text)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

LIMIT = 4096
"""Distinct keys a memo keeps by default (then it forgets them all at once)."""


class Memo(Generic[V]):
    """Values made from keys, kept for the next time the same key comes.

    A memo holds at most ``limit`` keys: when it is full it is emptied at once (cheaper than an
    LRU's bookkeeping on every hit, and the values are cheap to make again). A key that cannot be
    hashed (a list inside the tuple) is not kept: its value is made each time.
    """

    __slots__ = ("kept", "limit")

    def __init__(self, limit: int = LIMIT) -> None:
        self.kept: dict[Hashable, V] = {}
        self.limit = limit

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for ``key``, or the one ``make()`` returns (then kept)."""
        kept = self.kept
        try:
            hit = kept.get(key)
        except TypeError:  # (an unhashable value inside the key)
            return make()
        if hit is None:
            hit = make()
            if len(kept) >= self.limit:
                kept.clear()
            kept[key] = hit
        return hit
