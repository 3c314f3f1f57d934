"""Values given in another shape than their Box's, with as many elements: reshaped, warned once.

palaestrAI's published gym wrapper declares its reward as ``Box(shape=())`` and returns it as
``np.array([reward])``, shape (1,). Such a value holds exactly what its space asks, laid out
differently: palaestra reshapes it to the space's shape (and checks it then) rather than fail
the run, and logs one WARNING per environment process and uid naming the environment, the
uid and both shapes. A value with another number of elements, or outside the space once
reshaped, is still refused by the checks.
"""

from __future__ import annotations

import copy
import logging
from typing import TypeVar

import numpy as np

from palaestra.core.information import Information
from palaestra.core.spaces import Box, Space

LOG = logging.getLogger(__name__)

Info = TypeVar("Info", bound=Information)


class ShapeFix:
    """Reshapes values for one environment process; remembers which uids it warned about.

    Args:
        name: The environment's process name, for the warning.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.warned: set[tuple[str, str]] = set()

    def fixed(
        self, env: object, method: str, kind: str, info: Info, space: Space | None
    ) -> Info | None:
        """A copy of ``info`` with its value in ``space``'s shape, if that puts it in
        ``space``; else None (the value is refused as it is)."""
        if not isinstance(space, Box):
            return None
        try:
            value = np.asarray(info.value)
        except (TypeError, ValueError):
            return None
        if (
            value.dtype == object
            or value.shape == space.shape
            or value.size != int(np.prod(space.shape))
        ):
            return None
        reshaped = value.reshape(space.shape)
        if not space.contains(reshaped):
            return None
        fixed = copy.copy(info)
        fixed.value = reshaped
        key = (kind, str(info.uid))
        if key not in self.warned:
            self.warned.add(key)
            LOG.warning(
                "%s: %s.%s returned %s '%s' with shape %s, but its space %s has shape %s: "
                "reshaped to %s (warned once for this %s)",
                self.name,
                type(env).__name__,
                method,
                kind,
                info.uid,
                value.shape,
                space,
                space.shape,
                space.shape,
                kind,
            )
        return fixed
