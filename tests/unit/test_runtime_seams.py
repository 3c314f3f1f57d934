"""The seams between the runtime, its supervisor and the components: names, child specs, the
class of an error crossing a process boundary, and the import graph of ``palaestra.core``."""

from __future__ import annotations

import asyncio
import gc
import logging
import pathlib
import signal
import threading
from types import SimpleNamespace
from typing import cast

import grimp
import msgspec
import pytest
import zmq
import zmq.asyncio

from palaestra.core.description import names
from palaestra.core.errors import (
    EXIT_INVALID_INPUT,
    EXIT_RUN_FAILED,
    EXIT_STORE_UNUSABLE,
    PluginLoadError,
    StoreError,
)
from palaestra.core.plugin import PluginError
from palaestra.core.supervision.esm import Component
from palaestra.core.supervision.processes import Child, ChildSpec, Supervisor, check_args
from palaestra.core.supervision.runtime import error_info, timeout_error


def test_process_names_come_from_one_place() -> None:
    assert names.brain("a") == "Brain-a"
    assert names.muscle("a", 1) == "Muscle-a-1"
    assert names.environment("env", 0) == "Environment-env-0"
    assert names.controller(2) == "SimulationController-2"
    assert names.endpoint(names.brain("a"), "brain") == "Brain-a-brain"
    assert names.WRITER == "StoreWriter"


class _Worker(Component):
    def __init__(self, name: str, *, worker: int, label: str = "") -> None:
        super().__init__(name)
        self.worker = worker
        self.label = label


class _WorkerArgs(msgspec.Struct, frozen=True, kw_only=True):
    worker: int
    label: str


class _WrongArgs(msgspec.Struct, frozen=True, kw_only=True):
    workers: int


def test_a_child_spec_builds_its_class_from_a_typed_struct() -> None:
    args = _WorkerArgs(worker=3, label="x")
    check_args(_Worker, args)
    spec = ChildSpec(
        name="W-3", role="Worker", component=_Worker, args=args, run_dir="/x", parent_endpoint=""
    )
    built = spec.build()
    assert isinstance(built, _Worker)
    assert (built.name, built.worker, built.label) == ("W-3", 3, "x")


def test_arguments_that_do_not_fit_the_constructor_are_refused_in_the_parent() -> None:
    with pytest.raises(TypeError, match=r"_WrongArgs does not fit .*_Worker.*workers.*worker"):
        check_args(_Worker, _WrongArgs(workers=1))


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (StoreError("store gone"), EXIT_STORE_UNUSABLE),
        (PluginLoadError("no class"), EXIT_INVALID_INPUT),
        (ValueError("bad"), EXIT_RUN_FAILED),
    ],
)
def test_an_error_keeps_its_exit_code_and_kind_as_data(exc: Exception, code: int) -> None:
    info = error_info("P", exc)
    assert (info.kind, info.run_exit_code) == (type(exc).__name__, code)
    from palaestra.core.wire import messages as m

    decoded = m.decode(m.encode(m.Failed(error=info)))
    assert isinstance(decoded, m.Failed)
    assert decoded.error.run_exit_code == code


def test_a_plugin_raising_a_palaestra_error_keeps_its_code() -> None:
    try:
        try:
            raise StoreError("the plug-in's own store is gone")
        except StoreError as cause:
            raise PluginError(object(), "setup") from cause
    except PluginError as exc:
        info = error_info("Brain-a", exc)
    assert (info.kind, info.run_exit_code) == ("StoreError", EXIT_STORE_UNUSABLE)


def test_the_supervisor_does_not_import_the_runtime() -> None:
    graph = grimp.build_graph("palaestra")
    assert (
        graph.find_shortest_chain(
            "palaestra.core.supervision.processes", "palaestra.core.supervision.runtime"
        )
        is None
    )
    assert (
        graph.find_shortest_chain(
            "palaestra.core.supervision.esm", "palaestra.core.supervision.processes"
        )
        is None
    )


def test_a_failing_constructor_is_reported_by_the_plugin_class() -> None:
    from palaestra.agent import DummyBrain

    try:
        try:
            raise ValueError("no model file")
        except ValueError as cause:
            raise PluginError(DummyBrain, "__init__") from cause
    except PluginError as exc:
        info = error_info("Brain-a", exc)
    assert info.plugin == "palaestra.agent.dummy_brain:DummyBrain.__init__"
    assert (info.kind, info.message) == ("ValueError", "no model file")


def test_a_wait_for_children_cancelled_from_outside_leaves_nothing_unread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failed run's teardown cancels a phase stop waiting for its children: the wait must
    not leave a gathered future whose CancelledError asyncio logs as never retrieved."""
    children = [cast(Child, SimpleNamespace(exited=asyncio.Event())) for _ in range(2)]

    async def cancel_a_wait() -> None:
        waiting = asyncio.create_task(Supervisor.wait(children, 60.0))
        await asyncio.sleep(0)  # the wait begins (no time passes: one turn of the loop)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(cancel_a_wait())
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


class _TeardownFails(Component):
    """Finishes as soon as it is set up; its teardown then raises (a plug-in's ``teardown``
    or an environment's ``shutdown`` at the end of a phase that went well)."""

    async def setup(self, runtime: object) -> dict[str, str]:
        self.finish()
        return {}

    async def teardown(self) -> None:
        raise RuntimeError("could not save the model")


def test_a_teardown_failing_after_the_component_finished_fails_its_process(
    tmp_path: pathlib.Path,
) -> None:
    """The failure was logged as a warning and the process ended with exit 0, so the run
    ended 'finished': the process now reports ``Failed`` upward and exits with 1."""
    from palaestra.core.supervision.runtime import Runtime
    from palaestra.core.wire import messages as m

    parent_endpoint = f"ipc://{tmp_path}/parent"

    async def run() -> tuple[int, list[m.Message]]:
        ctx = zmq.asyncio.Context()
        parent = ctx.socket(zmq.ROUTER)
        parent.bind(parent_endpoint)
        spec = ChildSpec(
            name="Muscle-a-0",
            role="Muscle",
            component=_TeardownFails,
            args=_NoArgs(),
            run_dir=str(tmp_path),
            parent_endpoint=parent_endpoint,
        )
        child = asyncio.create_task(Runtime(spec.build(), spec=spec, run_dir=str(tmp_path)).run())
        received: list[m.Message] = []
        while not received or not isinstance(received[-1], m.Failed):
            sender, payload = await asyncio.wait_for(parent.recv_multipart(), 10)
            received.append(m.decode(payload))
        await parent.send_multipart([sender, m.encode(m.Shutdown(reason="ack"))])
        code = await asyncio.wait_for(child, 10)
        parent.close(linger=0)
        ctx.destroy(linger=0)
        return code, received

    previous = signal.getsignal(signal.SIGTERM)  # (the runtime takes SIGTERM)
    try:
        code, received = asyncio.run(run())
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 1
    failed = received[-1]
    assert isinstance(failed, m.Failed)
    assert failed.error.process == "Muscle-a-0"
    assert (failed.error.kind, failed.error.message) == (
        "RuntimeError",
        "could not save the model",
    )


class _NoArgs(msgspec.Struct, frozen=True, kw_only=True):
    pass


def test_a_thread_that_keeps_an_ending_process_is_named(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in's thread that is no daemon and never ends kept its process from exiting
    until stop_timeout killed it, and the run failed as a process that "did not stop within
    10 s" with nothing naming the thread: the ending process now names it in a warning."""
    from palaestra.core.supervision import processes

    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="uploader")
    background = threading.Thread(target=release.wait, name="heartbeat", daemon=True)
    stuck.start()
    background.start()
    monkeypatch.setattr(processes, "THREADS_GRACE", 0.0)
    try:
        with caplog.at_level(logging.WARNING, logger=processes.__name__):
            processes.watch_threads("Muscle-a-0").join(10)
    finally:
        release.set()
        stuck.join()
        background.join()
    assert (
        "Muscle-a-0: thread 'uploader', which a plug-in started and which is no daemon "
        "thread, still runs at its end" in caplog.text
    )
    assert "heartbeat" not in caplog.text
    assert "uploader" not in processes.warn_of_threads("Muscle-a-0")  # (ended: not named)


def test_a_late_stop_names_the_plugin_call_each_late_process_is_in() -> None:
    """Each process that told its parent which plug-in call its stop is in (``Busy``) is named
    with it; one that did not, without."""
    calls = {"Environment-a-0": "m:A.shutdown()", "Environment-b-0": "m:B.shutdown()"}
    one = timeout_error(["Environment-a-0"], "stop", 2.0, "stop_timeout", calls)
    assert one.error.message == (
        "Environment-a-0 did not stop within 2 s: its m:A.shutdown() did not return "
        "(the runtime config's stop_timeout: raise it if that is too short)"
    )
    late = ["Environment-a-0", "Brain-x", "Environment-b-0"]
    several = timeout_error(late, "stop", 2.0, calls=calls)
    assert several.error.message == (
        "Environment-a-0, Brain-x, Environment-b-0 did not stop within 2 s: Environment-a-0's "
        "m:A.shutdown(), Environment-b-0's m:B.shutdown() did not return"
    )
    assert timeout_error(["Brain-x"], "stop", 2.0, calls=calls).error.message == (
        "Brain-x did not stop within 2 s"
    )
