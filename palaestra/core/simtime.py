"""A point in an environment's simulated time: :class:`SimTime`, palaestrAI's sim time."""

from __future__ import annotations

from datetime import datetime
from typing import Any


class SimTime:
    """A point in simulated time, in ticks, as a timestamp, or both.

    *Ticks* count an environment's advance in whatever unit it steps (events, seconds of a
    simulator); *timestamps* are :class:`datetime.datetime` objects of the simulated world.
    An environment reports one in its :class:`~palaestra.environment.EnvironmentState`, and
    palaestra records it with the step in ``world_states.simtime`` (see :meth:`to_dict`).

    Args:
        simtime_ticks: The tick, an integer, or None.
        simtime_timestamp: The simulated date and time (a ``datetime`` or an ISO 8601
            string), or None.

    Raises:
        TypeError: A tick that is not an integer, or a timestamp that is not a datetime.
        ValueError: A timestamp string that is not ISO 8601.
    """

    __slots__ = ("_ticks", "_timestamp")

    def __init__(
        self, simtime_ticks: int | None = None, simtime_timestamp: datetime | str | None = None
    ) -> None:
        self._ticks = _ticks(simtime_ticks)
        self._timestamp = _timestamp(simtime_timestamp)

    @property
    def simtime_ticks(self) -> int | None:
        """The tick, or None."""
        return self._ticks

    @simtime_ticks.setter
    def simtime_ticks(self, ticks: int | None) -> None:
        self._ticks = _ticks(ticks)

    @property
    def simtime_timestamp(self) -> datetime | None:
        """The simulated date and time, or None; an ISO 8601 string is read when set."""
        return self._timestamp

    @simtime_timestamp.setter
    def simtime_timestamp(self, timestamp: datetime | str | None) -> None:
        self._timestamp = _timestamp(timestamp)

    def to_dict(self) -> dict[str, Any]:
        """The plain form the store keeps: ``{"simtime_ticks": int or None,
        "simtime_timestamp": ISO 8601 string or None}``."""
        stamp = self._timestamp
        return {
            "simtime_ticks": self._ticks,
            "simtime_timestamp": None if stamp is None else stamp.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimTime:
        """Read what :meth:`to_dict` wrote."""
        return cls(data.get("simtime_ticks"), data.get("simtime_timestamp"))

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._ticks = _ticks(state.get("simtime_ticks"))
        self._timestamp = _timestamp(state.get("simtime_timestamp"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SimTime):
            return NotImplemented
        return (self._ticks, self._timestamp) == (other._ticks, other._timestamp)

    def __hash__(self) -> int:
        return hash((self._ticks, self._timestamp))

    def __repr__(self) -> str:
        return f"SimTime(simtime_ticks={self._ticks!r}, simtime_timestamp={self._timestamp!r})"


def _ticks(ticks: Any) -> int | None:
    if ticks is None:
        return None
    if isinstance(ticks, bool) or not hasattr(ticks, "__index__"):
        raise TypeError(f"SimTime simtime_ticks must be an integer or None, got {ticks!r}")
    return int(ticks)


def _timestamp(stamp: Any) -> datetime | None:
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp)
        except ValueError as e:
            raise ValueError(
                f"SimTime simtime_timestamp {stamp!r} is not an ISO 8601 date and time"
            ) from e
    if stamp is not None and not isinstance(stamp, datetime):
        raise TypeError(
            f"SimTime simtime_timestamp must be a datetime, an ISO 8601 string or None, "
            f"got {stamp!r}"
        )
    return stamp
