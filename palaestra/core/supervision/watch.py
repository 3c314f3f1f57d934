"""Noticing a peer that stopped answering: a timestamp per request, checked by one watchdog.

The per-request cost is two attribute stores (no timer, no task per request); a single task
per process checks the open requests about once a second and fails the component, naming the
silent peer, when one has waited longer than its limit.
"""

from __future__ import annotations

import asyncio
import time

from palaestra.core.liveness import Looks
from palaestra.core.supervision.runtime import ComponentFailed
from palaestra.core.wire import messages as m


class Waiting:
    """One peer we send requests to: when we began waiting for its answer, if we are."""

    __slots__ = ("name", "limit", "configured", "since", "setting", "doing")

    def __init__(
        self,
        name: str,
        configured: float,
        grace: float = 0.0,
        setting: str = "answer_timeout",
        doing: str = "answer",
    ) -> None:
        self.name = name
        self.configured = configured
        self.limit = configured + grace
        self.since = 0.0
        self.setting = setting  # the runtime-config key of ``configured``
        self.doing = doing  # what the peer did not do, in the failure's message

    def begin(self) -> None:
        self.since = time.monotonic()

    def end(self) -> None:
        self.since = 0.0


def no_answer(waiting: Waiting, seconds: float) -> ComponentFailed:
    return ComponentFailed(
        m.ErrorInfo(
            process=waiting.name,
            kind="Timeout",
            message=(
                f"{waiting.name} did not {waiting.doing} for {seconds:.1f} s "
                f"({waiting.setting} is {waiting.configured:g} s)"
            ),
        )
    )


async def watch(peers: list[Waiting]) -> None:
    """Fail (raise) when a peer has kept us waiting longer than its limit.

    Checks ten times per (smallest) limit, at most once a second; a wait is counted from when
    this process last went on after a pause of its own, if that is later (see
    :class:`~palaestra.core.liveness.Looks`: the whole run was stopped and continued).
    """
    looks = Looks(1.0)
    while True:
        limits = [p.configured for p in peers] or [10.0]  # (peers may join)
        looks.every = min(1.0, min(limits) / 10)
        await asyncio.sleep(looks.every)
        now = looks.look()
        for peer in peers:
            if peer.since and looks.since(peer.since, now) > peer.limit:
                raise no_answer(peer, looks.since(peer.since, now))
