"""A Muscle's link to its Brain: a round's experience out, the Brain's update back.

With ``update_lag`` 0 or 1 each experience is answered before the Muscle acts again: the
Muscle :meth:`~BrainLink.send` s it and takes the answer now or before its next round
(:meth:`~BrainLink.answer`). With ``update_lag: async`` it sends without waiting
(:meth:`~BrainLink.send_async`): what the link has no room for waits in an outbox, answers are
taken as they come, and the Muscle acts with a stale policy while one is out. Every answer
goes to the Muscle's ``apply``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import NoReturn

from palaestra.core.supervision.watch import Waiting
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel, PeerGone

LOG = logging.getLogger(__name__)

OUTBOX_BYTES = 64 << 20
"""With ``update_lag: async``, experiences waiting for room on the link to a Brain that fell
behind are kept up to this many bytes; beyond, the Muscle waits for the Brain (so a Brain
slower than the world for good slows it rather than filling the memory)."""


class BrainLink:
    """The Muscle ``owner``'s link to the Brain ``brain`` (its channel: :attr:`channel`, once
    wired).

    Args:
        owner: The Muscle's process name (messages).
        brain: The Brain's process name (named when its answer is late).
        answer_timeout: How long an answer may take before the Brain is named.
        update_lag: 0, 1 or ``async`` (see :class:`~palaestra.core.description.specs.PhaseConfig`).
        apply: What the Muscle does with each answer (the link keeps the newest update and
            whether the Brain's phase rule holds).
        idle: Called when the Brain hung up: waits for the stop (its parent reports why).
    """

    def __init__(
        self,
        owner: str,
        brain: str,
        answer_timeout: float,
        update_lag: int,
        apply: Callable[[m.BrainUpdate], None],
        idle: Callable[[], NoReturn],
    ) -> None:
        self.owner = owner
        self.update_lag = update_lag
        self.channel: Channel | None = None
        self.awaiting = False  # an answer is due (update_lag 0 and 1)
        # update_lag async: experiences the Brain has not answered yet (sent or still in the
        # outbox, which holds those the link had no room for)
        self.outstanding = 0
        self.outbox: deque[bytes] = deque()
        self.outbox_bytes = 0
        self.outbox_warned = False
        self.waiting = Waiting(brain, answer_timeout, grace=1.0)
        self.last_update: bytes | None = None  # the newest update, pickled: for a hot reload
        self.end_phase = False  # the Brain said its phase rule holds: no further episode
        self._apply = apply
        self._idle = idle

    @property
    def wired(self) -> bool:
        return self.channel is not None

    def _channel(self) -> Channel:
        if self.channel is None:
            raise RuntimeError(f"{self.owner}: no link to its Brain yet")
        return self.channel

    def send(self, data: bytes) -> None:
        """Send ``data`` (an experience, or a request the Brain answers: take its answer with
        :meth:`receive`)."""
        try:
            self._channel().send(data)
        except PeerGone:
            self._idle()  # its parent reports why

    def receive(self) -> bytes:
        """The Brain's next message, as it came (waited for, the Brain named if late)."""
        self.waiting.begin()
        try:
            data = self._channel().recv()
        except PeerGone:
            self._idle()  # its parent reports why; the watch names it if not
        self.waiting.end()
        return data

    def tell(self, experience: bytes) -> None:
        """Send a round's experience (update_lag 0 or 1): the answer to the last one is taken
        first; this one's is then due (:meth:`answer`)."""
        if self.awaiting:
            self.answer()
        self.send(experience)
        self.awaiting = True

    def answer(self) -> None:
        """Take the Brain's answer, keep what it says (its phase rule, its update), apply it."""
        answer = m.decode(self.receive())
        self.awaiting = False
        if not isinstance(answer, m.BrainUpdate):
            raise TypeError(f"{self.owner}: unexpected {type(answer).__name__} from the brain")
        if answer.end_phase:
            self.end_phase = True
        if answer.update is not None:
            self.last_update = answer.update
        self._apply(answer)

    def send_async(self, experience: bytes, settle: bool) -> bool:
        """``update_lag: async``: send ``experience`` without waiting (what the link has no room
        for waits in the outbox) and apply the answers that are there; with ``settle``, wait
        for every answer. Whether an answer is still out: the Muscle acts with a stale
        policy."""
        self.outbox.append(experience)
        self.outbox_bytes += len(experience)
        if settle:
            self._settle()
            return False
        channel = self._channel()
        while self.outstanding and channel.ready():
            self._take_async_answer()
        stale = self.outstanding > 0
        self.outstanding += 1
        self._send_outbox()
        if self.outbox_bytes > OUTBOX_BYTES:  # the Brain fell far behind: wait for it
            if not self.outbox_warned:
                self.outbox_warned = True
                LOG.warning(
                    "%s: its Brain is more than %d MiB of experience behind: the Muscle waits "
                    "for it until it is below that (update_lag: async)",
                    self.owner,
                    OUTBOX_BYTES >> 20,
                )
            while self.outbox_bytes > OUTBOX_BYTES:
                self._take_async_answer()
                self._send_outbox()
        return stale

    def _settle(self) -> None:
        """Send the experiences still in the outbox and apply every answer (blocking): the
        Brain answers those it has while the rest wait for room on the link."""
        self.outstanding += 1  # the episode's last experience, in the outbox
        while self.outbox:
            if not self._send_outbox():  # the link is full: the Brain answers one of them
                self._take_async_answer()
        while self.outstanding:
            self._take_async_answer()

    def _send_outbox(self) -> bool:
        """Send what the link takes now, oldest first; whether anything went."""
        outbox = self.outbox
        sent = False
        while outbox and self._try_send(outbox[0]):
            self.outbox_bytes -= len(outbox.popleft())
            sent = True
        return sent

    def _take_async_answer(self) -> None:
        self.answer()
        self.outstanding -= 1

    def _try_send(self, data: bytes) -> bool:
        try:
            return self._channel().try_send(data)
        except PeerGone:
            self._idle()  # its parent reports why
