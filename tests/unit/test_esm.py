"""Tests of the event state machine, :mod:`palaestra.core.supervision.esm`."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import signal
from typing import Any

import pytest

from palaestra.core.supervision.esm import (
    TRANSITIONS,
    ChildExit,
    Component,
    InvalidTransition,
    State,
    on,
)
from palaestra.core.wire.messages import EnvStart, ErrorInfo, Ready, Shutdown, StoreAck

ALLOWED = {
    (State.PRISTINE, State.RUNNING),
    (State.PRISTINE, State.STOPPING),
    (State.PRISTINE, State.ERROR),
    (State.RUNNING, State.STOPPING),
    (State.RUNNING, State.FINISHED),
    (State.RUNNING, State.ERROR),
    (State.STOPPING, State.FINISHED),
    (State.STOPPING, State.ERROR),
}
FORBIDDEN = sorted(
    {(a, b) for a, b in itertools.product(State, State) if a is not b} - ALLOWED,
    key=lambda pair: (pair[0].value, pair[1].value),
)
# A path from PRISTINE to every state, through allowed transitions only.
PATH_TO = {
    State.PRISTINE: [],
    State.RUNNING: [State.RUNNING],
    State.STOPPING: [State.RUNNING, State.STOPPING],
    State.FINISHED: [State.RUNNING, State.FINISHED],
    State.ERROR: [State.ERROR],
}


def _id(pair: tuple[State, State]) -> str:
    return f"{pair[0].name}->{pair[1].name}"


class Plain(Component):
    """A component with only the handlers it inherits."""


def component_in(state: State, name: str = "comp") -> Plain:
    comp = Plain(name)
    for step in PATH_TO[state]:
        comp.transition(step)
    assert comp.state is state
    return comp


def error(message: str = "boom") -> ErrorInfo:
    return ErrorInfo(process="proc", kind="RuntimeError", message=message)


# --- the transition table ----------------------------------------------------------------


def test_table_is_exactly_the_documented_one() -> None:
    table = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert table == ALLOWED
    assert set(TRANSITIONS) == set(State)


@pytest.mark.parametrize("pair", sorted(ALLOWED, key=_id), ids=_id)
def test_allowed_transition(pair: tuple[State, State]) -> None:
    source, target = pair
    comp = component_in(source)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.transition(target)
    assert comp.state is target
    assert seen == [target]


@pytest.mark.parametrize("pair", FORBIDDEN, ids=_id)
def test_forbidden_transition(pair: tuple[State, State]) -> None:
    source, target = pair
    comp = component_in(source, name="forbidden-comp")
    seen: list[State] = []
    comp.add_listener(seen.append)
    with pytest.raises(InvalidTransition) as info:
        comp.transition(target)
    assert str(info.value) == f"forbidden-comp: {source.name} -> {target.name} is not allowed"
    assert comp.state is source
    assert seen == []


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.name)
def test_transition_to_the_current_state_is_a_no_op(state: State) -> None:
    comp = component_in(state)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.transition(state)
    assert comp.state is state
    assert seen == []


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.name)
def test_ended(state: State) -> None:
    assert component_in(state).ended is (state in (State.FINISHED, State.ERROR))


def test_new_component_is_pristine_without_error() -> None:
    comp = Plain("fresh")
    assert comp.name == "fresh"
    assert comp.state is State.PRISTINE
    assert comp.error is None
    assert comp.stop_reason == ""


# --- start, stop, finish, fail -------------------------------------------------------------


def test_start_moves_to_running() -> None:
    comp = Plain("c")
    comp.start()
    assert comp.state is State.RUNNING


def test_stop_is_idempotent_and_keeps_the_first_reason() -> None:
    comp = component_in(State.RUNNING)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.stop("first")
    comp.stop("second")
    comp.stop()
    assert comp.state is State.STOPPING
    assert comp.stop_reason == "first"
    assert seen == [State.STOPPING]


@pytest.mark.parametrize("state", [State.FINISHED, State.ERROR], ids=lambda s: s.name)
def test_stop_after_the_end_changes_nothing(state: State) -> None:
    comp = component_in(state)
    comp.stop("late")
    assert comp.state is state
    assert comp.stop_reason == ""


def test_stop_from_pristine() -> None:
    comp = Plain("c")
    comp.stop("early")
    assert comp.state is State.STOPPING
    assert comp.stop_reason == "early"


def test_finish_from_pristine_goes_through_stopping() -> None:
    comp = Plain("c")
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.finish()
    assert comp.state is State.FINISHED
    assert seen == [State.STOPPING, State.FINISHED]


@pytest.mark.parametrize("state", [State.RUNNING, State.STOPPING], ids=lambda s: s.name)
def test_finish_from_running_or_stopping(state: State) -> None:
    comp = component_in(state)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.finish()
    assert comp.state is State.FINISHED
    assert seen == [State.FINISHED]


@pytest.mark.parametrize("state", [State.FINISHED, State.ERROR], ids=lambda s: s.name)
def test_finish_after_the_end_changes_nothing(state: State) -> None:
    comp = component_in(state)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.finish()
    assert comp.state is state
    assert seen == []


@pytest.mark.parametrize(
    "state", [State.PRISTINE, State.RUNNING, State.STOPPING], ids=lambda s: s.name
)
def test_fail_moves_to_error_with_the_error(state: State) -> None:
    comp = component_in(state)
    seen: list[State] = []
    comp.add_listener(seen.append)
    first = error("first")
    comp.fail(first)
    assert comp.state is State.ERROR
    assert comp.error is first
    assert seen == [State.ERROR]


def test_fail_keeps_the_first_error_and_ignores_later_ones() -> None:
    comp = component_in(State.RUNNING)
    seen: list[State] = []
    comp.add_listener(seen.append)
    first, second = error("first"), error("second")
    comp.fail(first)
    comp.fail(second)
    comp.fail(error("third"))
    assert comp.state is State.ERROR
    assert comp.error is first
    assert seen == [State.ERROR]


def test_fail_after_finished_does_not_change_state() -> None:
    comp = component_in(State.FINISHED)
    seen: list[State] = []
    comp.add_listener(seen.append)
    comp.fail(error("too late"))
    assert comp.state is State.FINISHED
    assert comp.error is None
    assert seen == []


def test_every_listener_is_called_with_the_new_state_in_order() -> None:
    comp = Plain("c")
    calls: list[tuple[str, State]] = []
    comp.add_listener(lambda s: calls.append(("a", s)))
    comp.add_listener(lambda s: calls.append(("b", s)))
    comp.start()
    comp.stop()
    comp.finish()
    assert calls == [
        ("a", State.RUNNING),
        ("b", State.RUNNING),
        ("a", State.STOPPING),
        ("b", State.STOPPING),
        ("a", State.FINISHED),
        ("b", State.FINISHED),
    ]


def test_listener_sees_the_state_already_changed() -> None:
    comp = Plain("c")
    observed: list[State] = []
    comp.add_listener(lambda _: observed.append(comp.state))
    comp.start()
    assert observed == [State.RUNNING]


# --- handlers --------------------------------------------------------------------------------


class Base(Component):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    @on(Ready)
    def handle_ready(self, message: Ready, **routing: Any) -> str:
        self.calls.append(("base-ready", message, routing))
        return "base"

    @on(EnvStart)
    def handle_env_start(self, message: EnvStart) -> str:
        self.calls.append(("base-env-start", message, {}))
        return "base-env"


class Derived(Base):
    @on(Ready)
    def handle_ready_derived(self, message: Ready, **routing: Any) -> str:
        self.calls.append(("derived-ready", message, routing))
        return "derived"


class AsyncHandlers(Component):
    @on(Ready)
    async def handle_ready(self, message: Ready, sender: bytes | None = None) -> Any:
        await asyncio.sleep(0)
        return ("async", message.name, sender)

    @on(EnvStart)
    def handle_env_start(self, message: EnvStart, sender: bytes | None = None) -> Any:
        return ("sync", message.reset, sender)


class TwoTypes(Component):
    @on(Ready)
    @on(EnvStart)
    def handle_both(self, message: Any) -> str:
        return type(message).__name__


def test_on_marks_the_function_and_returns_it_unchanged() -> None:
    def handler(self: Any, message: Any) -> None:
        return None

    assert on(Ready)(handler) is handler
    assert handler._handles == [Ready]  # type: ignore[attr-defined]


def test_handler_table_of_a_subclass() -> None:
    assert Base.handlers == {
        Shutdown: "handle_shutdown",
        Ready: "handle_ready",
        EnvStart: "handle_env_start",
    }


def test_subclass_handler_overrides_the_base_one() -> None:
    assert Derived.handlers[Ready] == "handle_ready_derived"
    comp = Derived("d")
    result = asyncio.run(comp.dispatch(Ready(name="x")))
    assert result == "derived"
    assert [c[0] for c in comp.calls] == ["derived-ready"]
    # the base class's table is not changed by the subclass
    assert Base.handlers[Ready] == "handle_ready"


def test_inherited_handlers_are_found() -> None:
    comp = Derived("d")
    assert comp.handler_for(EnvStart()) == comp.handle_env_start
    assert comp.handler_for(Shutdown()) == comp.handle_shutdown
    assert asyncio.run(comp.dispatch(EnvStart(reset=True))) == "base-env"
    assert comp.calls == [("base-env-start", EnvStart(reset=True), {})]


def test_one_method_may_handle_several_types() -> None:
    comp = TwoTypes("t")
    assert asyncio.run(comp.dispatch(Ready(name="r"))) == "Ready"
    assert asyncio.run(comp.dispatch(EnvStart())) == "EnvStart"


def test_handler_for_an_unknown_type_is_none() -> None:
    assert Derived("d").handler_for(object()) is None


def test_dispatch_of_an_unknown_type_is_a_type_error_naming_the_component() -> None:
    comp = Derived("the-component")
    with pytest.raises(TypeError, match=r"^the-component has no handler for StoreAck$"):
        asyncio.run(comp.dispatch(StoreAck()))
    assert comp.state is State.PRISTINE


def test_dispatch_runs_sync_and_async_handlers() -> None:
    comp = AsyncHandlers("a")
    assert asyncio.run(comp.dispatch(Ready(name="n"))) == ("async", "n", None)
    assert asyncio.run(comp.dispatch(EnvStart(reset=True))) == ("sync", True, None)


def test_dispatch_passes_sender_to_sync_and_async_handlers() -> None:
    comp = AsyncHandlers("a")
    assert asyncio.run(comp.dispatch(Ready(name="n"), sender=b"id-1")) == ("async", "n", b"id-1")
    assert asyncio.run(comp.dispatch(EnvStart(), sender=b"id-2")) == ("sync", False, b"id-2")


def test_dispatch_passes_routing_kwargs_only_when_given() -> None:
    comp = Base("b")
    asyncio.run(comp.dispatch(Ready(name="one")))
    asyncio.run(comp.dispatch(Ready(name="two"), sender=b"peer"))
    assert comp.calls == [
        ("base-ready", Ready(name="one"), {}),
        ("base-ready", Ready(name="two"), {"sender": b"peer"}),
    ]


def test_dispatch_propagates_handler_exceptions() -> None:
    class Raising(Component):
        @on(Ready)
        async def handle(self, message: Ready) -> None:
            raise ValueError("handler failed")

    with pytest.raises(ValueError, match="handler failed"):
        asyncio.run(Raising("r").dispatch(Ready(name="x")))


@pytest.mark.parametrize(
    "state", [State.PRISTINE, State.RUNNING, State.STOPPING], ids=lambda s: s.name
)
def test_default_shutdown_handler_ends_finished(state: State) -> None:
    comp = component_in(state)
    result = asyncio.run(comp.dispatch(Shutdown(reason="parent says so")))
    assert result is None
    assert comp.state is State.FINISHED
    expected = "parent says so" if state is not State.STOPPING else ""
    assert comp.stop_reason == expected


def test_shutdown_after_error_keeps_error() -> None:
    comp = component_in(State.ERROR)
    asyncio.run(comp.dispatch(Shutdown(reason="late")))
    assert comp.state is State.ERROR


def test_bare_component_handles_shutdown() -> None:
    comp = Component("bare")
    asyncio.run(comp.dispatch(Shutdown(reason="stop")))
    assert comp.state is State.FINISHED


# --- child exits and signals ---------------------------------------------------------------


@pytest.mark.parametrize("state", [State.RUNNING, State.STOPPING], ids=lambda s: s.name)
def test_child_exit_zero_does_nothing(state: State) -> None:
    comp = component_in(state)
    seen: list[State] = []
    comp.add_listener(seen.append)
    assert comp.on_child_exit(ChildExit("Muscle-a-0", "Muscle", 0)) is None
    assert comp.state is state
    assert comp.error is None
    assert seen == []


def test_child_exit_non_zero_moves_to_error_naming_child_and_code() -> None:
    comp = component_in(State.RUNNING)
    assert comp.on_child_exit(ChildExit("Brain-defender", "Brain", 3)) is None
    assert comp.state is State.ERROR
    assert comp.error == ErrorInfo(
        process="Brain-defender",
        kind="ProcessDied",
        message="Brain-defender exited with code 3",
        exit_code=3,
    )
    assert "Brain-defender" in comp.error.describe()
    assert "3" in comp.error.describe()


def test_child_killed_by_signal_says_which() -> None:
    comp = component_in(State.RUNNING)
    comp.on_child_exit(ChildExit("Env-0", "Environment", -signal.SIGKILL))
    assert comp.state is State.ERROR
    assert comp.error is not None
    assert comp.error.message == "Env-0 was killed by SIGKILL"
    assert comp.error.exit_code == -signal.SIGKILL
    assert comp.error.process == "Env-0"


def test_child_exit_after_the_end_is_ignored() -> None:
    comp = component_in(State.FINISHED)
    comp.on_child_exit(ChildExit("late", "Muscle", 1))
    assert comp.state is State.FINISHED
    assert comp.error is None


def test_child_exit_keeps_the_first_error() -> None:
    comp = component_in(State.RUNNING)
    comp.on_child_exit(ChildExit("first", "Muscle", 1))
    comp.on_child_exit(ChildExit("second", "Muscle", 2))
    assert comp.error is not None
    assert comp.error.process == "first"


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "child exited with code 0"),
        (1, "child exited with code 1"),
        (255, "child exited with code 255"),
        (-signal.SIGKILL, "child was killed by SIGKILL"),
        (-signal.SIGTERM, "child was killed by SIGTERM"),
        (-signal.SIGSEGV, "child was killed by SIGSEGV"),
        (-250, "child was killed by 250"),
    ],
)
def test_child_exit_describe(code: int, text: str) -> None:
    event = ChildExit("child", "Muscle", code)
    assert event.describe() == text
    assert (event.name, event.role, event.exit_code) == ("child", "Muscle", code)


def run_signal(comp: Component, signum: int) -> Any:
    """Deliver a signal as the runtime does: call on_signal and await what it returns."""
    result = comp.on_signal(signum)
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_on_signal_ends_cleanly_as_if_the_parent_asked(signum: signal.Signals) -> None:
    comp = component_in(State.RUNNING)
    seen: list[State] = []
    comp.add_listener(seen.append)
    run_signal(comp, signum)
    assert comp.state is State.FINISHED
    assert comp.stop_reason == f"received {signum.name}"
    assert seen == [State.STOPPING, State.FINISHED]
    assert comp.error is None


def test_on_signal_goes_through_the_components_shutdown_handler() -> None:
    class CustomShutdown(Component):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.asked: list[str] = []

        @on(Shutdown)
        async def drain_then_stop(self, message: Shutdown) -> None:
            self.asked.append(message.reason)
            self.stop(message.reason)

    comp = CustomShutdown("custom")
    comp.start()
    run_signal(comp, signal.SIGTERM)
    assert comp.asked == ["received SIGTERM"]
    assert comp.state is State.STOPPING


def test_on_signal_after_the_end_changes_nothing() -> None:
    comp = component_in(State.ERROR)
    run_signal(comp, signal.SIGTERM)
    assert comp.state is State.ERROR
    assert comp.stop_reason == ""


def test_setup_and_teardown_defaults() -> None:
    comp = Plain("c")
    assert asyncio.run(comp.setup(runtime=None)) == {}
    assert asyncio.run(comp.teardown()) is None
    assert comp.state is State.PRISTINE
