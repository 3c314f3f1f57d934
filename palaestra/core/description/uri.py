"""Store URIs shown to people: the password hidden, without importing SQLAlchemy."""

from __future__ import annotations

import re

_PASSWORD = re.compile(r"(//[^:/@]*:)[^@]*@")


def hide_password(uri: str) -> str:
    """``uri`` with the password of its user part, if any, replaced by ``***``."""
    return _PASSWORD.sub(r"\1***@", uri)
