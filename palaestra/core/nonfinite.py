"""Non-finite numbers in JSON text: infinities and NaN as the strings "inf", "-inf" and "nan".

JSON has no number for them: msgspec writes ``null`` (losing the value) and :mod:`json` writes
``Infinity`` and ``NaN`` (which strict parsers refuse). The store's JSON columns and
``palaestra results`` exports write them as strings instead, with :func:`to_strict_json`, and
readers turn them back into floats with :func:`from_strict_json`. This module imports no numpy,
so the command line can use it without paying for that import.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import msgspec

from palaestra.core.texts import surviving

NON_FINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
"""The strings JSON text holds in place of the floats it has no number for."""


def to_strict_json(value: Any) -> Any:
    """Return ``value`` with every non-finite float (numpy's too) replaced by its
    :data:`NON_FINITE` string, also inside lists, tuples (which become lists) and dict values;
    everything else is returned unchanged, so the result encodes as strict JSON wherever
    ``value`` did.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else _name(value)
    if isinstance(value, list | tuple):
        return [to_strict_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_strict_json(v) for k, v in value.items()}
    if isinstance(value, Real) and not isinstance(value, int) and not math.isfinite(value):
        return _name(float(value))  # numpy's float32 and float16
    return value


_plain = msgspec.json.encode  # (called straight: json_text runs for a row a game a step)
_encode = surviving(msgspec.json.encode)  # (a lone surrogate as its escape: core.texts)


def json_text(value: Any) -> str:
    """``value`` as strict JSON text: the text the store's JSON columns hold.

    msgspec writes a non-finite float as ``null``, so only text with a ``null`` in it (a None,
    or such a float) is encoded again, from :func:`to_strict_json`'s copy: a value of finite
    numbers costs one substring search more than plain encoding. A text UTF-8 cannot encode
    (a lone surrogate) is written with the surrogate as its escape, ``\\udcff``
    (:mod:`palaestra.core.texts`).

    Raises:
        TypeError: ``value`` holds an object JSON has no form for.
    """
    try:
        text = _plain(value).decode()
    except UnicodeEncodeError:
        text = _encode(value).decode()
    if "null" in text:  # (a str search: much faster than one in bytes)
        text = _encode(to_strict_json(value)).decode()
    return text


def from_strict_json(value: Any) -> Any:
    """Return ``value`` (decoded JSON) with the :data:`NON_FINITE` strings, also inside lists
    and dict values, read back as floats: the inverse of :func:`to_strict_json` (a text value
    that is exactly one of these strings therefore reads back as a float).
    """
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    if isinstance(value, list):
        return [from_strict_json(v) for v in value]
    if isinstance(value, dict):
        return {k: from_strict_json(v) for k, v in value.items()}
    return value


def _name(value: float) -> str:
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"
