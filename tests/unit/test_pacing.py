"""Real-time pacing without processes: the no-backlog schedule on a fake clock, the lateness
summary, the links' non-blocking calls, and the run-file keys refused."""

from __future__ import annotations

import math
import os
import pickle
import queue
import select
import socket

import pytest

from palaestra.agent.muscle_process import MuscleProcess
from palaestra.core.description.specs import UPDATE_LAG_ASYNC
from palaestra.core.pacing import ON_TIME, SPIN, Pacer
from palaestra.core.supervision.hotloop import _STOP, MAX_POLL_MS, HotLoop, Stopped
from palaestra.core.wire import messages as m
from palaestra.core.wire.channel import Channel
from palaestra.experiment.runfile import load_run_text
from palaestra.store.rows import _quantile
from palaestra.testing import FakeLink, RowRecorder, muscle_step
from tests.unit.test_runfile import error_of, variant
from tests.unit.test_step_path import agent_spec, environment


class FakeClock:
    """Time that passes only when slept, or a microsecond per reading (so a spin ends)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        self.now += 1e-6
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def paced(monkeypatch: pytest.MonkeyPatch, rate: float) -> tuple[Pacer, FakeClock]:
    clock = FakeClock()
    monkeypatch.setattr("palaestra.core.pacing.time.perf_counter", clock)
    return Pacer(rate, clock.sleep), clock


def test_steps_are_due_one_period_apart_from_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    pacer, clock = paced(monkeypatch, 50)
    pacer.begin()
    began = []
    for _ in range(5):
        assert pacer.wait() == 0.0
        began.append(pacer.began)
        clock.now += 0.003  # the step's work
    periods = [b - a for a, b in zip(began, began[1:], strict=False)]
    assert periods == pytest.approx([0.02] * 4, abs=ON_TIME)
    assert all(s == pytest.approx(0.02 - 0.003 - SPIN, abs=1e-4) for s in clock.slept)


def test_a_late_step_moves_the_schedule_without_a_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    pacer, clock = paced(monkeypatch, 50)
    pacer.begin()
    pacer.wait()
    first = pacer.began
    clock.now += 0.065  # step 0 took 65 ms: steps 1, 2 and 3 were due meanwhile
    assert pacer.wait() == pytest.approx(0.045, abs=1e-4)  # step 1, 45 ms after its due time
    late = pacer.began
    assert late - first == pytest.approx(0.065, abs=1e-4)
    assert pacer.wait() == 0.0  # step 2: due one period after step 1 began, not at once
    assert pacer.began - late == pytest.approx(0.02, abs=ON_TIME)


def test_a_new_episode_starts_a_new_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    pacer, clock = paced(monkeypatch, 10)
    pacer.begin()
    pacer.wait()
    clock.now += 5.0  # the episode ended long ago; a reset took its time
    pacer.begin()
    assert pacer.wait() == 0.0  # the first step of an episode is never late


def test_a_step_held_up_after_its_wait_is_late_from_its_due_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pacer, clock = paced(monkeypatch, 50)
    pacer.begin()
    pacer.wait()
    pacer.wait()
    due = pacer.step_due
    clock.now += 0.010  # a Muscle's set points came 10 ms late
    assert pacer.delayed() == pytest.approx(0.010, abs=1e-4)
    assert pacer.due == pytest.approx(due + 0.010 + 0.02, abs=1e-4)


def test_an_episodes_first_step_waiting_for_its_agents_is_not_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first step of an episode is due at once, so a round driver always found its
    agents' first answers missing: every episode's first step was stored late by the time the
    agents took to answer (``experiment-show`` counted one late step per episode where nothing
    was slow). It is due when it begins; the schedule counts from then."""
    pacer, clock = paced(monkeypatch, 50)
    pacer.begin()
    pacer.wait()
    clock.now += 0.003  # the agents answer the episode's first observations
    assert pacer.delayed() == 0.0
    first = pacer.began
    assert pacer.due == pytest.approx(first + 0.02, abs=1e-4)
    assert pacer.wait() == 0.0 and pacer.began - first == pytest.approx(0.02, abs=ON_TIME)
    clock.now += 0.010  # the second step's set points are 10 ms late: that one is
    assert pacer.delayed() == pytest.approx(0.010, abs=1e-4)


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="steps per second > 0"):
        Pacer(0)


def test_quantiles_are_values_that_occurred() -> None:
    values = [float(i) for i in range(1, 101)]
    assert (_quantile(values, 0.5), _quantile(values, 0.99), _quantile([3.0], 0.99)) == (
        50.0,
        99.0,
        3.0,
    )


def test_try_send_sends_nothing_when_the_link_is_full() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stop_read, stop_write = socket.socketpair()
    try:
        sender = Channel(ours, "peer", stop_read.fileno(), lambda: None)
        receiver = Channel(theirs, "us", stop_read.fileno(), lambda: None)
        assert not receiver.ready()
        sent = 0
        while sender.try_send(b"x" * 1000):
            sent += 1
            assert sent < 100_000, "the link never filled"
        assert receiver.ready()
        assert [receiver.recv() for _ in range(sent)] == [b"x" * 1000] * sent
        assert not receiver.ready()
        long = bytes(range(256)) * 1000  # several packets
        assert sender.try_send(long)
        assert receiver.recv() == long
    finally:
        for sock in (ours, theirs, stop_read, stop_write):
            sock.close()


# --- the run file --------------------------------------------------------------------------


def test_step_rate_and_async_update_lag_are_read() -> None:
    text, _ = variant("worker: 2", "worker: 2\n        step_rate: 60\n        update_lag: async")
    config = load_run_text(text, path="run.yml", check_classes=False).phases[0].config
    assert (config.step_rate, config.update_lag) == (60.0, UPDATE_LAG_ASYNC)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("step_rate", "-1", "expected a number of steps per second from 0 to 1000000"),
        ("step_rate", "fast", "expected a number of steps per second from 0 to 1000000"),
        ("step_rate", ".nan", "expected a number of steps per second from 0 to 1000000"),
        ("update_lag", "sync", "expected 0, 1 or async"),
        ("update_lag", "2", "expected 0, 1 or async"),
    ],
)
def test_bad_pacing_values_are_refused(key: str, value: str, expected: str) -> None:
    text, line = variant("worker: 2", f"worker: 2\n        {key}: {value}")
    error = error_of(text)
    assert (error.line, error.key) == (line + 1, f"schedule[0].only_phase.phase_config.{key}")
    assert error.message.startswith(expected)


# --- update_lag: async, a Muscle's step with an in-memory Brain link ---------------------------


def async_muscle() -> tuple[MuscleProcess, FakeLink, list[m.BrainUpdate], m.EnvBaseline]:
    """A Muscle (DummyMuscle counting upwards) with ``update_lag: async``, wired to a Brain link
    whose answers are held back in the list returned until the test :meth:`~FakeLink.put` s
    them."""
    env = environment()
    baseline = env.start_world(reset=False)
    sensors = [f"env.{i}" for i in range(5)]
    process = MuscleProcess(
        "Muscle-one-0",
        agent=agent_spec("one", sensors, sensors, "palaestra.agent:DummyMuscle"),
        agent_id=1,
        worker=0,
        mode="train",
        seed=3,
        brain_endpoint="",
        store_endpoint=None,
        sensors=baseline.sensors[:5],
        actuators=baseline.actuators[:5],
        update_lag=UPDATE_LAG_ASYNC,
    )
    process.out.rows = RowRecorder("muscle_actions")
    held: list[m.BrainUpdate] = []
    answers = iter(range(10, 100))

    def think(message: m.Message) -> None:
        if isinstance(message, m.Experiences):
            held.append(m.BrainUpdate(update=pickle.dumps(next(answers))))

    brain = FakeLink("Brain-one", think)
    process.wire(brain, {"env": FakeLink("Environment-env-0")})
    process.begin_episode(
        m.AgentEpisode(episode=0, sensors=baseline.sensors[:5], actuators=baseline.actuators[:5])
    )
    return process, brain, held, baseline


def test_an_async_muscle_acts_without_its_brains_answer_and_applies_it_later() -> None:
    muscle, brain, held, _ = async_muscle()
    reward = [m.InfoDesc("Dummy Reward", None, 1)]
    acted = []
    for step in range(4):  # the Brain answers nothing meanwhile: the Muscle acts on
        rewards = None if step == 0 else reward
        seen = m.AgentStep(step=step, values=[step] * 5, rewards=rewards, done=False)
        answer = muscle_step(muscle, seen)
        acted.append(answer.setpoints["env.0"])
    assert acted == [99, 99, 99, 99]  # DummyMuscle's count before any update (-1 mod 100)
    assert len(held) == 4 and muscle.brain.outstanding == 4
    for update in held[:3]:  # three answers come in: all are applied before the next action
        brain.put(update)
    answer = muscle_step(muscle, m.AgentStep(step=4, values=[4] * 5, rewards=reward, done=False))
    assert answer.setpoints["env.0"] == 12  # the newest of them
    assert muscle.brain.outstanding == 2  # the 4th answer, and the one to this step's experience
    brain.answer = lambda message: m.BrainUpdate(update=None)  # it answers at once from now
    for update in held[3:5]:
        brain.put(update)
    last = muscle_step(muscle, m.AgentStep(step=5, values=[5] * 5, rewards=reward, done=True))
    assert last.setpoints == {} and muscle.brain.outstanding == 0 and not brain.inbox
    stale = [row["stale_policy"] for row in muscle.out.rows.recorded]
    assert stale == [False, True, True, True, True]  # steps 0 to 4 (step 4: one still out)
    experiences = [e for x in brain.sent if isinstance(x, m.Experiences) for e in x.items]
    assert [e.step for e in experiences] == [0, 1, 2, 3, 4, 5] and experiences[-1].done


class _Poll:
    """``select.poll`` as a hot loop's sleep uses it: refuses what poll refuses, records the
    timeouts, and finds the stop posted on its ``stop_at``-th call."""

    def __init__(self, loop: HotLoop, stop_at: int) -> None:
        self.loop = loop
        self.stop_at = stop_at
        self.timeouts: list[int] = []

    def poll(self, timeout: int) -> list[tuple[int, int]]:
        if timeout > 2**31 - 1:
            raise OverflowError("timeout is too large")
        self.timeouts.append(timeout)
        if len(self.timeouts) < self.stop_at:
            return []
        self.loop._items.put(_STOP)  # what HotLoop.post(_STOP) does
        os.write(self.loop._stop_writer, b"i")
        return [(self.loop.stop_fd, select.POLLIN)]


def test_a_paced_wait_longer_than_poll_takes_sleeps_in_parts_until_the_stop() -> None:
    """``step_rate: 1.0e-7`` (a step every 116 days), which the run file takes, waited longer
    than ``poll`` can at once: the run failed at its second step with 'Environment-env-0:
    OverflowError: timeout is too large' and a traceback. It sleeps in parts now, as long as
    the schedule says (an endless wait until the stop)."""
    loop = object.__new__(HotLoop)  # (its sleep needs no runtime)
    loop.stop_fd, loop._stop_writer = os.pipe()
    loop._items = queue.SimpleQueue()
    try:
        loop._sleeper = poller = _Poll(loop, stop_at=99)
        loop.sleep(1e7)
        assert sum(poller.timeouts) == 10**10 and max(poller.timeouts) == MAX_POLL_MS
        loop._sleeper = poller = _Poll(loop, stop_at=3)
        with pytest.raises(Stopped):
            loop.sleep(math.inf)
        assert poller.timeouts == [MAX_POLL_MS] * 3
        loop._sleeper = None  # the real poll: the stop posted above is still there
        with pytest.raises(Stopped):
            loop.sleep(1e7)
    finally:
        os.close(loop.stop_fd)
        os.close(loop._stop_writer)
