"""Converting sensors, actuators and rewards between plug-in objects and message data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from palaestra.core.information import json_value
from palaestra.core.spaces import Space
from palaestra.core.wire.messages import InfoDesc

InfoT = TypeVar("InfoT")


def describe(info: Any, uid: str | None = None) -> InfoDesc:
    """An information object as message data: its space's (cached) description, its value
    as JSON."""
    space = info.space
    return InfoDesc(
        uid if uid is not None else str(info.uid),
        space.to_text() if space is not None else None,
        json_value(info),
    )


class SpaceCache:
    """Rebuilds :class:`Space` objects from descriptions once per uid, not once per step."""

    def __init__(self) -> None:
        self._spaces: dict[str, tuple[str | None, Space | None]] = {}

    def space(self, uid: str, description: str | None) -> Space | None:
        cached = self._spaces.get(uid)
        if cached is not None and cached[0] == description:
            return cached[1]
        space = Space.from_text(description) if description is not None else None
        self._spaces[uid] = (description, space)
        return space

    def build(self, cls: type[InfoT], descs: Iterable[InfoDesc]) -> list[InfoT]:
        """Information objects of type ``cls`` from descriptions, values decoded by space."""
        out = []
        for desc in descs:
            space = self.space(desc.uid, desc.space)
            value = space.from_json_value(desc.value) if space is not None else desc.value
            out.append(cls(value, space, desc.uid))  # type: ignore[call-arg]
        return out
