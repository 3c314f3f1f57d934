"""Real-time pacing: environment steps at a fixed rate of wall-clock time, without backlog.

With ``phase_config: {step_rate: HZ}`` whoever drives an episode asks a :class:`Pacer` before
each step of the world. Step ``k`` is due at ``t0 + k / HZ``. A step that begins after its due
time is *late* by the difference, and the next step is due one period after the late step
began, so a stall is not followed by a burst catching up (RLBot's rule); a step that begins
within :data:`ON_TIME` of its due time keeps the schedule, so the rate does not drift.

The wait sleeps (interruptibly, on the hot loop's stop pipe) until :data:`SPIN` before the due
time, then spins on :func:`time.perf_counter` (on Linux the same clock as ``monotonic``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

SPIN = 1.5e-3
"""Seconds before the due time at which the wait stops sleeping and spins: a sleep on a busy
machine may wake up a millisecond or more late (measured: p99 1.5 ms on a loaded 2-core
machine), a spin does not."""
ON_TIME = 1e-4
"""A step that begins at most this many seconds after its due time is on time (``late_by``
0.0) and keeps the schedule."""


class Pacer:
    """Paces the steps of one episode after another at ``rate`` steps per second.

    Call :meth:`begin` when an episode begins, and :meth:`wait` right before each step of
    the world; :attr:`late_by` then says how late that step began (0.0: on time). A driver
    whose step is held up after :meth:`wait` returned (a Muscle's set points still missing)
    calls :meth:`delayed` when the step really begins.

    Args:
        rate: Steps per second, > 0.
        sleep: Sleeps (about) the seconds given; the hot loop's
            :meth:`~palaestra.core.supervision.hotloop.HotLoop.sleep` raises ``Stopped`` on a stop.
    """

    __slots__ = ("period", "due", "step_due", "began", "late_by", "opening", "_sleep")

    def __init__(self, rate: float, sleep: Callable[[float], None] = time.sleep) -> None:
        if not rate > 0:
            raise ValueError(f"a step rate is a number of steps per second > 0, got {rate!r}")
        self.period = 1.0 / rate
        self.due: float | None = None  # of the next step; None: the episode's first
        self.step_due = 0.0  # when the last step was due (perf_counter seconds)
        self.began = 0.0  # when the last step began (perf_counter seconds)
        self.late_by = 0.0  # how late it began
        self.opening = False  # the last step was an episode's first (due when it begins)
        self._sleep = sleep

    def begin(self) -> None:
        """A new episode: its first step is due at once, the schedule counts from it."""
        self.due = None

    def wait(self) -> float:
        """Wait until the next step is due; returns (and keeps in :attr:`late_by`) how many
        seconds late it begins, 0.0 when on time."""
        now = time.perf_counter()
        due = self.due
        self.opening = due is None
        if due is None:  # the first step of an episode
            return self._began(now, now)
        if due - now > SPIN:
            self._sleep(due - now - SPIN)
            now = time.perf_counter()
        while now < due:
            now = time.perf_counter()
        return self._began(now, due)

    def delayed(self) -> float:
        """The step :meth:`wait` let go only begins now (a peer was late): its lateness,
        counted from its due time, and the schedule moved on from now if it is late. An
        episode's first step is due when it begins (its agents answer its first observations
        first: not late), and the schedule counts from then."""
        now = time.perf_counter()
        return self._began(now, now if self.opening else self.step_due)

    def _began(self, now: float, due: float) -> float:
        late = now - due
        if late > ON_TIME:
            self.due = now + self.period  # no backlog: one period after the late step began
            self.late_by = late
        else:
            self.due = due + self.period
            self.late_by = 0.0
        self.step_due = due
        self.began = now
        return self.late_by
