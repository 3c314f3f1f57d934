"""The marks of a process and the judge that reads them (palaestra.core.liveness), in one
process: the marks are written here, the judge reads them with a clock of its own."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.core import liveness, procfs


@pytest.fixture
def marks(tmp_path: Path) -> Iterator[liveness.Judge]:
    """This process's marks in ``tmp_path``, and a judge with answer_timeout 2, store 10."""
    liveness.begin(str(tmp_path), "Muscle-a-0")
    yield liveness.Judge(str(tmp_path), answer_timeout=2.0, store_timeout=10.0)
    liveness._marks = None


def test_a_process_that_beats_and_waits_is_alive(marks: liveness.Judge) -> None:
    pid = _own_pid()
    liveness.beat()
    assert marks.verdict("Muscle-a-0", pid) is None
    liveness.step_begins()
    working = liveness.waiting()  # waiting for a peer: not stuck, however long
    assert marks.verdict("Muscle-a-0", pid, now=time.monotonic() + 1.5) is None
    liveness.waited(working)
    assert marks.verdict("Muscle-a-0", pid, now=time.monotonic() + 1.5) is None


def test_a_step_longer_than_answer_timeout_is_stuck(marks: liveness.Judge) -> None:
    pid = _own_pid()
    liveness.step_begins()
    later = time.monotonic() + 2.5
    assert liveness._marks is not None
    liveness._marks[liveness._BEAT] = later  # the loop kept beating meanwhile
    verdict = marks.verdict("Muscle-a-0", pid, now=later)
    assert verdict is not None and verdict.kind == "Stuck"
    assert "has worked on one step for 2.5 s" in verdict.message
    assert "answer_timeout is 2 s" in verdict.message


def test_a_loop_that_stops_beating_is_frozen_unless_it_is_in_a_store_call(
    marks: liveness.Judge,
) -> None:
    pid = _own_pid()
    liveness.beat()
    later = time.monotonic() + 3.0
    verdict = marks.verdict("Muscle-a-0", pid, now=later)
    assert verdict is not None and verdict.kind == "Frozen"
    assert "showed no sign of life for 3.0 s" in verdict.message
    with liveness.holding():  # the writer's insert: up to store_timeout
        assert marks.verdict("Muscle-a-0", pid, now=later) is None
        assert marks.verdict("Muscle-a-0", pid, now=later + 9) is not None
    assert marks.verdict("Muscle-a-0", pid) is None  # it beat on leaving the call


def test_silence_while_the_judge_itself_did_not_run_is_nobodys(marks: liveness.Judge) -> None:
    """A look far later than due: the judge's own process was stopped (Ctrl-Z, a job
    scheduler's suspend: the whole run with it). What it did not see is not counted; silence
    after it is, so a process frozen alone is still found."""
    pid = _own_pid()
    liveness.beat()
    assert liveness._marks is not None
    liveness._marks[liveness._BEAT] -= 30  # (its last beat, 30 s ago)
    looks = marks.looks
    assert marks.verdict("Muscle-a-0", pid, now=looks.look()) is not None  # (no pause seen)
    looks.last -= 30  # the judge's last look was 30 s ago: it was stopped too
    resumed = looks.look()
    assert looks.resumed == resumed
    assert marks.verdict("Muscle-a-0", pid, now=resumed) is None
    assert marks.verdict("Muscle-a-0", pid, now=resumed + 1.9) is None
    verdict = marks.verdict("Muscle-a-0", pid, now=resumed + 2.5)
    assert verdict is not None and verdict.kind == "Frozen"
    assert "showed no sign of life for 2.5 s" in verdict.message
    liveness.step_begins()  # a step that began before the pause counts from the resume too
    liveness._marks[liveness._STEP] -= 30
    liveness._marks[liveness._BEAT] = resumed + 2.5
    assert marks.verdict("Muscle-a-0", pid, now=resumed + 1.9) is None
    verdict = marks.verdict("Muscle-a-0", pid, now=resumed + 2.5)
    assert verdict is not None and verdict.kind == "Stuck"


def test_a_wait_counts_only_the_time_its_process_saw_go_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A blocking wait's timeout in slices: a slice that ends far later than due means that
    the waiting process did not run (the whole run was stopped and continued); the time is
    then counted anew from when it went on."""
    clock = [100.0]
    monkeypatch.setattr(liveness, "_monotonic", lambda: clock[0])
    waits = liveness.seen_waits(0.6)
    assert next(waits) == liveness.BEAT_SECONDS
    clock[0] += 0.25
    assert next(waits) == liveness.BEAT_SECONDS
    clock[0] += 30.0  # (stopped)
    slices = []
    for wait in waits:
        slices.append(wait)
        clock[0] += wait
    assert slices == pytest.approx([0.25, 0.25, 0.1])  # 0.6 s from the resume, not 0.35


def test_a_timeout_of_the_control_loop_counts_only_what_it_saw() -> None:
    """``seen_timeout`` expires as ``asyncio.timeout`` does, except that time in which its
    loop did not run (here blocked, as a stopped process's is) is nobody's delay."""

    async def blocked_for_longer_than_the_timeout() -> None:
        async with liveness.seen_timeout(0.5):
            await asyncio.sleep(0.05)
            time.sleep(liveness.PAUSE_SECONDS + 0.5)  # the behaviour under test: no loop
            await asyncio.sleep(0.3)

    async def waits_too_long() -> None:
        async with liveness.seen_timeout(0.3):
            await asyncio.sleep(30)

    asyncio.run(blocked_for_longer_than_the_timeout())
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(waits_too_long())
    assert 0.3 <= time.monotonic() - began < 10


def test_a_stopped_process_is_named_stopped_also_in_a_store_call(tmp_path: Path) -> None:
    """A real child that made its marks, then stopped (SIGSTOP)."""
    code = (
        "import sys, time; from palaestra.core import liveness; "
        f"liveness.begin({str(tmp_path)!r}, 'StoreWriter'); "
        "cm = liveness.holding(); cm.__enter__(); print('ready', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGSTOP)
        judge = liveness.Judge(str(tmp_path), answer_timeout=60.0, store_timeout=2.0)
        deadline = time.monotonic() + 10
        while procfs.state(child.pid) != "T":  # bounded: the signal is on its way
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert judge.verdict("StoreWriter", child.pid) is None  # it beat just now
        verdict = judge.verdict("StoreWriter", child.pid, now=time.monotonic() + 3)
        assert verdict is not None and verdict.kind == "Stopped"
        assert verdict.message.startswith(f"StoreWriter (pid {child.pid}) has been stopped for")
        judge.forget(child.pid)
    finally:
        liveness.kill(child.pid)
        child.wait(10)


def test_no_marks_no_verdict(tmp_path: Path) -> None:
    """A process without a file here (started elsewhere, or not yet made it) is not judged."""
    judge = liveness.Judge(str(tmp_path), answer_timeout=2.0, store_timeout=10.0)
    assert judge.verdict("Brain-x", 12345, now=time.monotonic() + 100) is None
    liveness.step_begins()  # outside a run's child nothing is marked, nothing fails
    liveness.waited(liveness.waiting())


def _own_pid() -> int:
    import os

    return os.getpid()


def test_the_writer_is_judged_against_store_timeout(tmp_path: Path) -> None:
    """Going without a beat, the writer's limit is the shorter of store_timeout (a user's
    setting for it) and answer_timeout (300 s by default); in a store call, the longer."""
    liveness.begin(str(tmp_path), "StoreWriter")
    try:
        judge = liveness.Judge(str(tmp_path), answer_timeout=300.0, store_timeout=2.0)
        pid = _own_pid()
        liveness.beat()
        later = time.monotonic() + 3.0
        verdict = judge.verdict("StoreWriter", pid, now=later)
        assert verdict is not None and verdict.kind == "Frozen"
        assert "store_timeout is 2 s" in verdict.message
        with liveness.holding():
            assert judge.verdict("StoreWriter", pid, now=later) is None
            assert judge.verdict("StoreWriter", pid, now=later + 300) is not None
    finally:
        liveness._marks = None
