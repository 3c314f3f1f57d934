"""``palaestrai.store``: importable (plug-ins import ``Session`` at module level), not usable.

palaestra writes its own store; palaestrAI's database session does not exist here. Calling
:func:`Session` raises an error that says what to use instead; the modules under
``palaestrai.store`` (``query``, ``database_model``, ...) fail to import, saying the same.
"""

from __future__ import annotations

from typing import NoReturn

from palaestra.compat.finder import REFUSED

__all__ = ["Session"]


def Session(*args: object, **kwargs: object) -> NoReturn:  # noqa: N802 - palaestrAI's name
    """palaestrAI's database session: not offered by palaestra; raises RuntimeError."""
    raise RuntimeError(
        "palaestrai.store.Session: palaestra does not offer palaestrAI's database session; "
        + REFUSED["palaestrai.store.query"]
    )
