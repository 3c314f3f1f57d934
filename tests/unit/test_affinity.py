"""Which CPU a worker's processes run on with ``cpu_affinity: worker``
(:mod:`palaestra.core.supervision.affinity`)."""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Callable

import pytest

from palaestra.core.supervision.affinity import Affinity, pin, share, to_background


def test_workers_go_round_the_cpus_in_order() -> None:
    affinity = Affinity([3, 1, 2])
    assert [affinity.of_worker(w) for w in range(5)] == [(1,), (2,), (3,), (1,), (2,)]


def test_no_cpu_is_refused() -> None:
    with pytest.raises(ValueError, match="no CPU"):
        Affinity([])


def in_a_child(change: Callable[[], None], look: Callable[[], object]) -> list[object]:
    """What ``look`` sees in a forked child (so the test process keeps its CPUs and its
    priority) after ``change``: in the child's main thread, in a thread started before the
    change and in one started after, in that order."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.close(read)
            ready, seen = threading.Event(), []
            older = threading.Thread(target=lambda: (ready.wait(), seen.append(look())))
            older.start()
            change()
            ready.set()
            older.join()
            newer = threading.Thread(target=lambda: seen.append(look()))
            newer.start()
            newer.join()
            os.write(write, repr([look(), *seen]).encode())
        finally:
            os._exit(0)  # (never back into the test session)
    os.close(write)
    with os.fdopen(read) as pipe:
        report = pipe.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    found: list[object] = ast.literal_eval(report)
    return found


def test_a_process_is_pinned_with_its_threads() -> None:
    """pin() moves every thread of the process, and those started after inherit it."""
    cpus = sorted(os.sched_getaffinity(0))
    found = in_a_child(lambda: pin((cpus[-1],)), lambda: sorted(os.sched_getaffinity(0)))
    assert found == [[cpus[-1]]] * 3


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's SCHED_IDLE")
def test_a_process_in_the_background_takes_only_a_cpu_no_other_wants() -> None:
    """to_background() (``writer_priority: background``) puts every thread of the process in
    Linux's SCHED_IDLE class, and those started after inherit it."""
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    found = in_a_child(to_background, lambda: os.sched_getscheduler(0))
    assert found == [os.SCHED_IDLE] * 3


def test_nothing_to_pin_leaves_the_process_where_it_is() -> None:
    before = os.sched_getaffinity(0)
    pin(())
    assert os.sched_getaffinity(0) == before


def test_runs_executing_at_once_share_the_cpus() -> None:
    assert [share([0, 1, 2, 3], slot, 2) for slot in range(2)] == [(0, 2), (1, 3)]
    assert [share([0, 1], slot, 3) for slot in range(3)] == [(0,), (1,), (0,)]
    assert share([5, 4], 0, 1) == (4, 5)
