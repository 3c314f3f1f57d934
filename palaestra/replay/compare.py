"""Comparing a replayed step with its record: the first value that differs, named."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from palaestra.core.nonfinite import from_strict_json, to_strict_json
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import reward_items

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


@dataclass(frozen=True)
class Divergence:
    """Where a replay first differs from its record.

    Attributes:
        phase: The phase's index.
        worker: The worker.
        episode: The episode (0-based, as recorded).
        step: The step (1-based, as in ``world_states``).
        environment: The environment's uid.
        kind: ``"sensor"``, ``"reward"`` or ``"done"``.
        uid: The sensor's or reward's uid (the environment's uid for ``done``).
        recorded: The recorded value (``"missing"`` where the record has none).
        replayed: The replayed value (``"missing"`` where the replay has none).
    """

    phase: int
    worker: int
    episode: int
    step: int
    environment: str
    kind: str
    uid: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        what = f"done of '{self.uid}'" if self.kind == "done" else f"{self.kind} '{self.uid}'"
        return (
            f"phase {self.phase}, worker {self.worker}, episode {self.episode}, step "
            f"{self.step}: {what} was {self.recorded!r} in the record, {self.replayed!r} in "
            "the replay"
        )


def as_stored(value: Any) -> Any:
    """``value`` as the store gives it back (JSON: tuples as lists, non-finite floats kept)."""
    return from_strict_json(_decode(_encode(to_strict_json(value))))


def first_difference(
    recorded: dict[str, Any], row: m.WorldStateRow
) -> tuple[str, str, Any, Any] | None:
    """The first (kind, uid, recorded, replayed) in which ``row`` differs from the recorded
    row (its ``sensors``, ``rewards`` and ``done``); None if it does not."""
    for kind, mine, theirs in (
        ("sensor", row.sensors, recorded["sensors"]),
        ("reward", row.rewards, recorded["rewards"]),
    ):
        if mine == theirs:
            continue
        mine = as_stored(mine)
        if isinstance(theirs, list) or isinstance(mine, list):  # (rewards whose uid repeats)
            found = _listed_difference(reward_items(theirs), reward_items(mine))
            if found is not None:
                return kind, *found
            continue
        for uid in dict.fromkeys([*theirs, *mine]):
            a, b = theirs.get(uid, "missing"), mine.get(uid, "missing")
            if not _same(a, b):
                return kind, uid, a, b
    if bool(recorded["done"]) != row.done:
        return "done", "", bool(recorded["done"]), row.done
    return None


def _listed_difference(
    theirs: list[tuple[str, Any]], mine: list[tuple[str, Any]]
) -> tuple[str, Any, Any] | None:
    """The first (uid, recorded, replayed) in which rewards kept in order differ (a row keeps
    them as a list where a uid repeats); None if they do not."""
    for k in range(max(len(theirs), len(mine))):
        uid, a = theirs[k] if k < len(theirs) else (mine[k][0], "missing")
        other, b = mine[k] if k < len(mine) else (uid, "missing")
        if other != uid:
            return uid, a, "missing"
        if not _same(a, b):
            return uid, a, b
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (a recorded NaN replayed as NaN is no divergence)."""
    if a == b:
        return True
    return isinstance(a, float) and isinstance(b, float) and a != a and b != b
