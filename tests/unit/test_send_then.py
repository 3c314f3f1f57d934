"""Work that waits for a message to be out (palaestra.core.wire.channel.send_then): the
rows and statistics of a step, made off its chain."""

from __future__ import annotations

import pytest

from palaestra.core.supervision.hotloop import Stopped
from palaestra.core.wire.channel import send_then


def test_send_then_does_its_work_after_sending_and_keeps_the_sends_failure() -> None:
    """What waited for a message to be out runs after it; when sending fails (a stop) it is
    still tried, and the failure raised is the send's, also when that work fails too."""
    done: list[str] = []
    send_then(lambda: done.append("sent"), lambda: done.append("then"))
    assert done == ["sent", "then"]

    def stopped() -> None:
        raise Stopped

    def failing() -> None:
        done.append("tried")
        raise ValueError("a row that cannot be stored")

    with pytest.raises(Stopped):
        send_then(stopped, failing)
    assert done[-1] == "tried"
