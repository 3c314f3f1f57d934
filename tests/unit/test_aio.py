"""The event loop of asynchronous environments (palaestra.environment.aio), in one process."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from palaestra.core.plugin import PluginError
from palaestra.environment.aio import Awaiter, BackgroundTaskError, LoopStoppedError

pytestmark = pytest.mark.timeout(30)


class World:
    """A plug-in stand-in whose coroutines start and await tasks."""

    def __init__(self) -> None:
        self.beat = threading.Event()
        self.task: asyncio.Task[Any] | None = None

    async def start(self) -> str:
        self.task = asyncio.create_task(self._ticks(), name="ticks")
        return "started"

    async def _ticks(self) -> None:
        await asyncio.sleep(0)  # runs on only after start() has returned
        self.beat.set()
        await asyncio.Event().wait()

    async def fail(self) -> None:
        raise ValueError("no")

    async def hang(self) -> None:
        await asyncio.Event().wait()

    async def die_later(self) -> None:
        async def broken() -> None:
            raise RuntimeError("world broke")

        self.task = asyncio.create_task(broken(), name="broken")

    async def die_handled(self) -> str:
        async def broken() -> None:
            raise RuntimeError("world broke")

        try:
            await asyncio.create_task(broken())
        except RuntimeError as exc:
            return f"handled: {exc}"
        return "not reached"


@pytest.fixture
def awaiter() -> Any:
    awaiter = Awaiter("test")
    yield awaiter
    awaiter.close(1.0)


def test_a_plain_value_passes_and_starts_no_loop(awaiter: Awaiter) -> None:
    assert awaiter(object(), "update", (1, 2, 3)) == (1, 2, 3)
    assert awaiter(object(), "update", [1]) == [1]
    assert awaiter.loop is None


def test_a_coroutine_is_awaited_and_its_tasks_run_between_calls(awaiter: Awaiter) -> None:
    world = World()
    assert awaiter(world, "start", world.start()) == "started"
    # no call is in progress: the task it started runs on all the same
    assert world.beat.wait(10), "the task did not run after the call returned"
    assert world.task is not None and not world.task.done()
    cancelled = awaiter.close(1.0)
    assert cancelled == ["ticks"]
    assert world.task.cancelled()


def test_an_exception_in_the_coroutine_names_the_method(awaiter: Awaiter) -> None:
    world = World()
    with pytest.raises(PluginError) as caught:
        awaiter(world, "update", world.fail())
    assert caught.value.plugin.endswith("World.update")
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_coroutine_that_does_not_end_in_time_is_named(awaiter: Awaiter) -> None:
    world = World()
    with pytest.raises(PluginError) as caught:
        awaiter(world, "shutdown", world.hang(), 0.2)
    assert caught.value.plugin.endswith("World.shutdown")
    assert "did not end within 0.2 s" in str(caught.value.__cause__)


def test_a_task_that_dies_unawaited_fails_the_call_in_progress(awaiter: Awaiter) -> None:
    world = World()

    async def update() -> None:  # waits for an answer the dead task will never give
        await world.die_later()
        await asyncio.Event().wait()

    with pytest.raises(PluginError) as caught:
        awaiter(world, "update", update())
    assert caught.value.plugin.endswith("World.update")
    cause = caught.value.__cause__
    assert isinstance(cause, BackgroundTaskError)
    assert "'World.die_later.<locals>.broken' (broken)" in str(cause)
    assert "RuntimeError: world broke" in str(cause)
    assert isinstance(cause.__cause__, RuntimeError)


def test_a_task_that_died_between_calls_fails_the_next_one(awaiter: Awaiter) -> None:
    world = World()
    awaiter(world, "start_environment", world.die_later())
    assert world.task is not None
    with pytest.raises(PluginError) as caught:
        for _ in range(1000):  # until the loop has seen it die (bounded)
            awaiter(world, "update", asyncio.sleep(0.001))
    assert isinstance(caught.value.__cause__, BackgroundTaskError)


def test_a_failure_the_environment_awaits_is_its_own_business(awaiter: Awaiter) -> None:
    world = World()
    assert awaiter(world, "update", world.die_handled()) == "handled: world broke"
    assert awaiter(world, "update", asyncio.sleep(0, "again")) == "again"


def test_a_class_found_not_awaitable_once_is_not_asked_again_but_coroutines_still_are(
    awaiter: Awaiter,
) -> None:
    """The awaiter keeps the classes whose objects are not awaitable (the check of an ABC
    costs a step); generators are asked each time (``types.coroutine`` makes some awaitable),
    and the kept classes are bounded."""
    import types

    from palaestra.environment import aio

    class State:
        pass

    state = State()
    assert awaiter(object(), "update", state) is state
    assert State in aio._SETTLED
    assert awaiter(object(), "update", state) is state

    def plain() -> Any:
        yield 1

    @types.coroutine
    def awaitable() -> Any:
        yield from ()
        return "awaited"

    generator = plain()
    assert awaiter(object(), "update", generator) is generator
    assert types.GeneratorType not in aio._SETTLED
    assert awaiter(object(), "update", awaitable()) == "awaited"
    for _ in range(aio.SETTLED_MOST + 1):
        awaiter(object(), "update", type("Made", (), {})())
    assert len(aio._SETTLED) <= aio.SETTLED_MOST


@pytest.mark.parametrize("ending", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()])
def test_a_coroutine_that_tries_to_end_the_process_fails_the_call(
    awaiter: Awaiter, ending: BaseException
) -> None:
    # (SystemExit and KeyboardInterrupt ended the loop's thread, in silence: the call, and
    # every call after it, waited for ever; the run failed as Stuck after answer_timeout)
    world = World()

    async def update() -> None:
        raise ending

    for _ in range(2):  # (the loop serves on)
        with pytest.raises(PluginError) as caught:
            awaiter(world, "update", update(), 10.0)
        assert caught.value.plugin.endswith("World.update")
        assert caught.value.__cause__ is ending
    assert awaiter(world, "update", asyncio.sleep(0, "served")) == "served"


def test_a_task_that_tries_to_end_the_process_fails_the_next_call(awaiter: Awaiter) -> None:
    world = World()

    async def leave() -> None:
        async def ended() -> None:
            raise SystemExit(0)

        world.task = asyncio.create_task(ended(), name="co-simulation")

    awaiter(world, "start_environment", leave())
    with pytest.raises(PluginError) as caught:
        awaiter(world, "update", asyncio.Event().wait(), 10.0)
    cause = caught.value.__cause__
    assert isinstance(cause, BackgroundTaskError)
    assert "(co-simulation), left running on its event loop, failed with SystemExit: 0" in str(
        cause
    )


def test_an_environment_that_stops_its_loop_fails_the_call_naming_it(awaiter: Awaiter) -> None:
    """``loop.stop()`` ended the loop's thread: the call waited for ever, and the run failed as
    Stuck after answer_timeout. The loop runs on, and the call in progress, or the next one,
    fails naming it."""
    world = World()

    async def update() -> str:
        asyncio.get_running_loop().stop()
        return "stepped"

    errors: list[PluginError] = []
    for call in (update, lambda: asyncio.sleep(0)):
        try:
            awaiter(world, "update", call(), 10.0)
        except PluginError as exc:
            errors.append(exc)
            break
    else:
        pytest.fail("no call failed")
    assert errors[0].plugin.endswith("World.update")
    cause = errors[0].__cause__
    assert isinstance(cause, LoopStoppedError)
    assert "it stopped its event loop (loop.stop())" in str(cause)
    assert awaiter(world, "shutdown", asyncio.sleep(0, "down"), 10.0, closing=True) == "down"
    assert awaiter.close(1.0) == []
    assert awaiter.loop is None
