"""``palaestrai.core``: only its reset messages (``palaestrai.core.protocol``) are offered.

An environment written for palaestrAI imports the request its ``reset(request)`` is given;
everything else of palaestrAI's runtime is not offered: importing it fails, saying so.
"""

from __future__ import annotations

from palaestra.compat.finder import REFUSED


def __getattr__(name: str) -> object:
    raise ImportError(
        f"palaestra does not offer 'palaestrai.core.{name}': {REFUSED['palaestrai.core']}",
        name=name,
    )
