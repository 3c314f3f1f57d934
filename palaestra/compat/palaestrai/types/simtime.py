"""``palaestrai.types.simtime``: a point in simulated time, as ticks and/or a timestamp."""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = ["SimTime"]


class SimTime:
    """A point in an environment's time: a tick count, a datetime, or both (each optional).

    Args:
        simtime_ticks: Steps of the simulation so far, an int (or None).
        simtime_timestamp: The simulated wall-clock time, a datetime, or an ISO 8601 string.
    """

    def __init__(
        self, simtime_ticks: int | None = None, simtime_timestamp: datetime | str | None = None
    ) -> None:
        self.simtime_ticks = simtime_ticks
        self.simtime_timestamp = simtime_timestamp

    @property
    def simtime_ticks(self) -> int | None:
        return self._ticks

    @simtime_ticks.setter
    def simtime_ticks(self, ticks: int | None) -> None:
        if ticks is not None and (not isinstance(ticks, int) or isinstance(ticks, bool)):
            raise TypeError(f"simtime_ticks must be an int or None, got {ticks!r}")
        self._ticks = ticks

    @property
    def simtime_timestamp(self) -> datetime | None:
        return self._timestamp

    @simtime_timestamp.setter
    def simtime_timestamp(self, timestamp: datetime | str | None) -> None:
        if isinstance(timestamp, str):
            timestamp = datetime.fromisoformat(timestamp)
        if timestamp is not None and not isinstance(timestamp, datetime):
            raise TypeError(f"simtime_timestamp must be a datetime or None, got {timestamp!r}")
        self._timestamp = timestamp

    def __getstate__(self) -> dict[str, Any]:
        stamp = self._timestamp
        return {
            "simtime_ticks": self._ticks,
            "simtime_timestamp": stamp.isoformat() if stamp is not None else None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.simtime_ticks = state["simtime_ticks"]
        self.simtime_timestamp = state["simtime_timestamp"]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SimTime):
            return NotImplemented
        return (self._ticks, self._timestamp) == (other._ticks, other._timestamp)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"SimTime(simtime_ticks={self._ticks}, simtime_timestamp={self._timestamp!r})"
