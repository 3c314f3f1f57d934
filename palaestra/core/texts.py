"""Texts that UTF-8 cannot encode: a lone surrogate, written as its escape where bytes are made.

A Python ``str`` may hold a lone surrogate (``"\\udcff"``): ``os.fsdecode`` of bytes that are
no UTF-8 (a file's name) gives one, as does any decoding with ``errors="surrogateescape"``. No
UTF-8 encoder takes it: msgspec, sqlite3 and psycopg raise ``UnicodeEncodeError``. So a plug-in
whose exception, sensor value, reward name or record said one killed the process that sent it
(a Muscle died reporting its own failure: the run said ``ProcessDied``). Where palaestra makes
texts into bytes (a message: :func:`palaestra.core.wire.messages.encode`; a row:
:mod:`palaestra.core.wire.records`; JSON text: :func:`palaestra.core.nonfinite.json_text`; a
statement's values: :meth:`palaestra.store.driver.Store.execute`), such a text is written with
each lone surrogate as the six characters ``\\udcff``, as ``repr`` and ``errors=
"backslashreplace"`` show it; every other character is kept. The console writes them so too
(:mod:`palaestra.core.supervision.console`).

Only a value that failed to encode is copied (:func:`surviving`): the encoders' cost is that of
a ``try``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


def escaped_text(text: str) -> str:
    """``text`` with each lone surrogate written as its escape.

    >>> escaped_text("bad \\udcff, gut ü")
    'bad \\\\udcff, gut ü'
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escaped(value: Any) -> Any:
    """``value`` with :func:`escaped_text` of every text in it: itself, the items of lists,
    tuples and sets (a set as a list), the keys and values of dicts and the fields of msgspec
    Structs (a copy of the same class); anything else as it is."""
    if isinstance(value, str):
        return escaped_text(value)
    if isinstance(value, list):
        return [escaped(item) for item in value]
    if isinstance(value, tuple):
        return tuple(escaped(item) for item in value)
    if isinstance(value, set | frozenset):  # (encoded as an array, as a list is)
        return [escaped(item) for item in value]
    if isinstance(value, dict):
        return {escaped(key): escaped(item) for key, item in value.items()}
    if isinstance(value, msgspec.Struct):
        fields = {name: escaped(getattr(value, name)) for name in value.__struct_fields__}
        return msgspec.structs.replace(value, **fields)
    return value


def surviving(encode: Callable[[T], bytes]) -> Callable[[T], bytes]:
    """``encode``, which on a text UTF-8 cannot encode encodes the :func:`escaped` value."""

    def encoded(value: T) -> bytes:
        try:
            return encode(value)
        except UnicodeEncodeError:
            return encode(escaped(value))

    encoded.__doc__ = encode.__doc__
    return encoded
