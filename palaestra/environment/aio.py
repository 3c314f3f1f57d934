"""Asynchronous environments: one event loop per process that awaits their coroutine methods.

An environment written for palaestrAI may declare ``start_environment``, ``update``, ``reset``
or ``shutdown`` as ``async def`` (palaestrai-mosaik's ``MosaikEnvironment`` does) and start
tasks of its own in them, such as a co-simulation that must keep running between two calls.
:class:`Awaiter` gives such an environment what palaestrAI gives it: an event loop that lives
as long as the process (a daemon thread running it for ever), on which every coroutine the
environment returns is awaited, and on which the tasks it starts keep running between calls.

- A plain return value passes through untouched: a synchronous environment never starts the
  loop, and its step costs one type check.
- An exception inside the coroutine is the environment's, named by its method
  (:class:`~palaestra.core.plugin.PluginError`); so is a ``SystemExit`` or
  ``KeyboardInterrupt`` (a ``sys.exit()`` in the environment's code), which the loop outlives.
- A task the environment left running that fails, and whose failure nobody awaits (a dead
  co-simulation), fails the call in progress or the next one, naming the task: the
  environment would otherwise wait for it for ever.
- An environment that stops the loop (``loop.stop()``) fails the call in progress or the next
  one (:class:`LoopStoppedError`): its calls would wait for ever.
- :meth:`Awaiter.close` cancels what the environment left running and stops the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable, Coroutine
from types import GeneratorType
from typing import Any

from palaestra.core.liveness import seen_waits
from palaestra.core.plugin import FAILURES, PluginError

UNAWAITED = (
    "returned an un-awaited coroutine: palaestra awaits only an Environment's "
    "start_environment, update, reset and shutdown (make this method a plain def)"
)
CLOSE_TIMEOUT = 5.0
"""Seconds the tasks an environment left running get to end once cancelled."""
ENDINGS = (SystemExit, KeyboardInterrupt)
"""What a coroutine of the environment may raise to end the process: asyncio lets it out of
the loop, which would end the loop's thread (in silence: a thread ends so on ``SystemExit``)
and leave every call waiting for ever; it fails the call, or the call after a task's, instead,
as a synchronous method's does (:func:`palaestra.core.plugin.call`)."""


class BackgroundTaskError(Exception):
    """A task an environment started on its event loop failed and nobody awaited it."""


class LoopStoppedError(Exception):
    """An environment stopped the event loop palaestra runs for it (``loop.stop()``)."""


class EnvironmentLoop:
    """One asyncio event loop, run for ever by a daemon thread of this process."""

    def __init__(self, owner: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_task_factory(self._task)
        self._calls: set[asyncio.Task[Any]] = set()  # ours: their outcome goes to the caller
        self._failed: concurrent.futures.Future[BaseException] = concurrent.futures.Future()
        self._closing = False  # close() stops the loop: no one else may
        self._thread = threading.Thread(target=self._serve, name=f"{owner}-asyncio", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            try:
                self.loop.run_forever()
            except ENDINGS:  # a coroutine of the environment tried to end the process
                # asyncio lets it out of the loop (the task holds it, its callbacks wait):
                # the loop runs on, so that the call or its task's watch reports it
                continue
            if self._closing:
                return
            # the environment stopped it: its calls and tasks would wait for ever; the loop
            # runs on, so that the call in progress (or the next) fails naming it
            self._fail(
                LoopStoppedError(
                    "it stopped its event loop (loop.stop()), which palaestra runs for it as "
                    "long as its process: end its own tasks instead"
                )
            )

    def _fail(self, error: BaseException) -> None:
        """The environment lost its loop (``error``): the call in progress, or the next, fails
        with it (the first such error only)."""
        if not self._failed.done():
            self._failed.set_result(error)

    def _task(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        """A task ended: if it failed and nothing took its exception by the end of this
        round of the loop (an ``await`` of it, a gather), the environment lost it."""
        if task in self._calls:  # a call's outcome goes to its caller
            self._calls.discard(task)
        elif _unretrieved(task):
            self.loop.call_soon(self._check, task)

    def _check(self, task: asyncio.Task[Any]) -> None:
        if not _unretrieved(task) or self._failed.done():
            return
        exc = task.exception()  # taken: asyncio logs no "never retrieved" for it later
        coro = task.get_coro()
        what = getattr(coro, "__qualname__", None) or task.get_name()
        error = BackgroundTaskError(
            f"its task {what!r} ({task.get_name()}), left running on its event loop, "
            f"failed with {type(exc).__name__}: {exc}"
        )
        error.__cause__ = exc
        self._fail(error)

    def run(
        self,
        awaitable: Awaitable[Any],
        plugin: object,
        method: str,
        timeout: float | None = None,
        *,
        closing: bool = False,
    ) -> Any:
        """Await ``awaitable`` on the loop and give its result (within ``timeout`` s).

        Raises:
            PluginError: it raised, did not end in time, or (unless ``closing``: a shutdown
                is awaited all the same) a task the environment left running failed first.
        """
        if not closing and self._failed.done():
            discard(awaitable)
            self._raise_failure(plugin, method)
        future = asyncio.run_coroutine_threadsafe(self._call(awaitable), self.loop)
        waited = [future] if closing else [future, self._failed]
        # (a run stopped as a whole uses none of the time up)
        for wait in [None] if timeout is None else seen_waits(timeout):
            done, _ = concurrent.futures.wait(waited, wait, concurrent.futures.FIRST_COMPLETED)
            if done:
                break
        if not future.done():
            future.cancel()
            if not closing:
                self._raise_failure(plugin, method)
            raise PluginError(plugin, method) from TimeoutError(
                f"its coroutine did not end within {timeout:g} s"
            )
        try:
            return future.result()
        except FAILURES as exc:  # (an ending, or a stray GeneratorExit, too)
            raise PluginError(plugin, method) from exc

    async def _call(self, awaitable: Awaitable[Any]) -> Any:
        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)  # until it ends (see _ended)
        return await awaitable

    def _raise_failure(self, plugin: object, method: str) -> None:
        if self._failed.done():
            raise PluginError(plugin, method) from self._failed.result()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> list[str]:
        """Cancel every task still running, wait up to ``timeout`` s for them to end, stop
        the loop; the names of the tasks that were cancelled."""
        if not self.loop.is_running():
            return []
        try:
            cancelled = asyncio.run_coroutine_threadsafe(_cancel_all(timeout), self.loop).result(
                timeout + 1.0
            )
        except (concurrent.futures.TimeoutError, RuntimeError):
            cancelled = ["(tasks that did not end within the time)"]
        self._closing = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
        return cancelled


async def _cancel_all(timeout: float) -> list[str]:
    me = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not me]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # taken, so that asyncio does not log it at exit
    return [task.get_name() for task in tasks]


def _unretrieved(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` failed and nobody has taken its exception yet (asyncio keeps this
    flag to log "Task exception was never retrieved")."""
    return bool(getattr(task, "_log_traceback", False))


SETTLED_MOST = 64
_SETTLED: set[type] = {tuple}
"""Classes whose objects an environment returned and that are not awaitable (asked once: the
check of an ABC costs a step as much as a reward's check)."""


class Awaiter:
    """What an environment's methods return, settled: a coroutine (an ``async def`` method,
    or any awaitable) is awaited on the process's :class:`EnvironmentLoop`, made at the first
    one; anything else is returned as it is. One per process, shared by its games."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.loop: EnvironmentLoop | None = None

    def __call__(
        self,
        plugin: object,
        method: str,
        result: Any,
        timeout: float | None = None,
        *,
        closing: bool = False,
    ) -> Any:
        """``result`` settled (see :meth:`EnvironmentLoop.run` for ``timeout`` and
        ``closing``)."""
        cls = result.__class__
        if cls in _SETTLED:
            return result
        if not inspect.isawaitable(result):
            if not issubclass(cls, GeneratorType):  # (a generator's is the object's own)
                if len(_SETTLED) >= SETTLED_MOST:  # (classes made anew: not kept for ever)
                    _SETTLED.clear()
                _SETTLED.add(cls)
            return result
        if self.loop is None:
            self.loop = EnvironmentLoop(self.owner)
        return self.loop.run(result, plugin, method, timeout, closing=closing)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> list[str]:
        """Cancel what the environment left running and stop the loop (if one was made)."""
        loop, self.loop = self.loop, None
        return loop.close(timeout) if loop is not None else []


def discard(result: Any) -> None:
    """Close a coroutine that will not be awaited, so that Python does not warn about it."""
    if isinstance(result, Coroutine):
        result.close()
