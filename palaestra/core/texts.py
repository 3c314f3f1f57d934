"""Texts that UTF-8 cannot encode: a lone surrogate, written as its escape where bytes are made
(and read back in a stored path that is used on the disk).

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

A path is such a text too (a directory whose name is no UTF-8): the store keeps it with the
escapes, which name nothing on the disk. Where a path is read back from the store to be used
there (the run file's, to find its plug-ins; the brain dumps', to find their files),
:func:`path_on_disk` reads the escapes back (:func:`unescaped_text`) if the path as stored
names nothing and the one read back does: a name that has the six characters ``\\udcff`` of
its own is kept where it is found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_ESCAPE = re.compile(r"\\u(d[89a-f][0-9a-f]{2})")
"""The escape :func:`escaped_text` writes for a lone surrogate (as ``backslashreplace``)."""


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


def unescaped_text(text: str) -> str:
    """``text`` with each escape :func:`escaped_text` writes for a lone surrogate read back as
    the surrogate: its inverse for a text that had no such six characters of its own.

    >>> unescaped_text("d\\\\udcff/run.yml") == "d\\udcff/run.yml"
    True
    """
    if "\\u" not in text:  # (most texts)
        return text
    return _ESCAPE.sub(lambda found: chr(int(found[1], 16)), text)


def path_on_disk(stored: str, exists: Callable[[str], bool] = os.path.lexists) -> str:
    """The path ``stored``, as a store kept it, names on this machine: itself, unless nothing
    is there (``exists``) and something is at the path with its escapes read back
    (:func:`unescaped_text`: a directory whose name is no UTF-8 was stored with them). Where
    both or neither are there, ``stored`` as it is."""
    real = unescaped_text(stored)
    if real == stored or exists(stored) or not exists(real):
        return stored
    return real
