"""Numbers, durations and stored texts written for people, the same way by every command."""

from __future__ import annotations

import math
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""The control characters (Unicode's ``Cc``) but newline and tab."""


def number(value: float | None) -> str:
    """``value`` for people: ``124,800``, ``12.35``, ``0.0123``, ``1.2e-07``; ``-`` for None.

    Large numbers get thousands separators and no exponent up to 10**15; numbers under 1 keep
    three significant digits.
    """
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude >= 1e15 or magnitude < 1e-4:
        return f"{value:.2e}"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def seconds(value: float | None) -> str:
    """A duration: ``4.2 s``, ``3m 05s``, ``2h 07m``; ``-`` for None."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m {rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def counted(count: int, name: str) -> str:
    """``1 episode``, ``2 episodes``."""
    return f"{count} {name}" if count == 1 else f"{count} {name}s"


def printable(text: str) -> str:
    """A text of the store that a plug-in may have written (a run's reason, a failed reload's
    traceback) as it is safe to print on a terminal: each control character but newline and
    tab as its escape, ``\\x1b`` (an ESC or C1 CSI starts a sequence that can set the window
    title or clear the screen; a carriage return overwrites the line).

    >>> printable("bad\\x1b[2J value\\nnext")
    'bad\\\\x1b[2J value\\nnext'
    """
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
