"""Checks of a built-in environment's params, as the run file is checked: a value that does
not fit is refused naming the environment and the key (exit 2), not found at a step."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from palaestra.core.errors import InvalidInputError


def seconds(where: str, key: str, value: Any, positive: bool = False) -> float:
    """A param in seconds: a number >= 0 (> 0 when ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(
            f"{where}: params.{key}: expected a number of seconds, got {value!r}"
        )
    if value < 0 or (positive and value == 0):
        sign = "> 0" if positive else ">= 0"
        raise InvalidInputError(f"{where}: params.{key}: expected seconds {sign}, got {value!r}")
    return float(value)


def choice(where: str, key: str, value: Any, choices: Sequence[str]) -> str:
    """A param that takes one of ``choices``."""
    if value not in choices:
        raise InvalidInputError(
            f"{where}: params.{key}: expected one of {', '.join(choices)}, got {value!r}"
        )
    return str(value)


def count(where: str, key: str, value: Any, least: int = 1) -> int:
    """A param that counts: an integer >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInputError(
            f"{where}: params.{key}: expected an integer >= {least}, got {value!r}"
        )
    return value
