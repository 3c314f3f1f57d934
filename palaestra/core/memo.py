"""A bounded memo for the values a hot path makes again and again (rows' JSON text)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

V = TypeVar("V")

LIMIT = 4096
"""Distinct keys a memo keeps by default (then it forgets them all at once)."""

TRIAL = 1024
"""Lookups after which a memo judges whether keeping values pays (see :attr:`Memo.pays`)."""


class Memo(dict[Hashable, V], Generic[V]):
    """Values made from keys, kept for the next time the same key comes.

    A memo holds at most ``limit`` keys: when it is full it is emptied at once (cheaper than an
    LRU's bookkeeping on every hit, and the values are cheap to make again). A key that cannot be
    hashed (a list inside the tuple) is not kept: its value is made each time. A dict itself, and
    :meth:`get_or_make` takes the maker and its argument apart, so a hit creates no closure.
    """

    __slots__ = ("limit", "pays", "_asked", "_made")

    def __init__(self, limit: int = LIMIT) -> None:
        super().__init__()
        self.limit = limit
        self.pays = True
        """Whether keeping values pays: False once, after :data:`TRIAL` lookups, fewer than a
        quarter of them found their value (values that hardly repeat, such as continuous
        rewards); a caller then makes each value itself and spares the key."""
        self._asked = self._made = 0

    def get_or_make(self, key: Hashable, make: Callable[[Any], V], arg: Any) -> V:
        """The value kept for ``key``, or ``make(arg)`` (then kept)."""
        try:
            hit = self.get(key)
        except TypeError:  # (an unhashable value inside the key)
            return make(arg)
        if hit is None:
            hit = make(arg)
            if len(self) >= self.limit:
                self.clear()
            self[key] = hit
            self._made += 1
        self._asked += 1
        if self._asked == TRIAL:
            self.pays = self._made * 4 < TRIAL * 3
        return hit


def text_key(items: Iterable[tuple[Any, Any]]) -> tuple[Any, ...]:
    """A memo key for ``items`` (name, value) whose JSON text is kept: each value stands in it
    with its type, and a float zero with its sign, as the text tells them apart (``1``,
    ``1.0`` and ``True`` are equal, and so are ``0.0`` and ``-0.0``; their texts are not).
    A value that cannot be hashed (a list) leaves the key unhashable: made each time."""
    key = []
    for name, value in items:
        kind: Any = type(value)
        if kind is float and value == 0.0 and math.copysign(1.0, value) < 0:
            kind = None  # (-0.0)
        key.append((name, kind, value))
    return tuple(key)
