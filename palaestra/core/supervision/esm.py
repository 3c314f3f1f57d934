"""The event state machine: states, transitions and typed event dispatch of a component.

Every long-lived palaestra process runs one :class:`Component`. A component declares handlers
with :func:`on` for message types; the runtime (:mod:`palaestra.core.supervision.runtime`) feeds it
messages, child-exit events and signals. The machine itself is pure: no sockets, no processes, so
it is unit-tested directly.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import zmq.asyncio

from palaestra.core.wire.messages import ErrorInfo, Msg, Shutdown

if TYPE_CHECKING:
    from palaestra.core.wire.netlink import Links

LOG = logging.getLogger(__name__)


class State(enum.Enum):
    PRISTINE = "pristine"
    RUNNING = "running"
    STOPPING = "stopping"
    FINISHED = "finished"
    ERROR = "error"


TRANSITIONS: dict[State, frozenset[State]] = {
    State.PRISTINE: frozenset({State.RUNNING, State.STOPPING, State.ERROR}),
    State.RUNNING: frozenset({State.STOPPING, State.FINISHED, State.ERROR}),
    State.STOPPING: frozenset({State.FINISHED, State.ERROR}),
    State.FINISHED: frozenset(),
    State.ERROR: frozenset(),
}


class InvalidTransition(RuntimeError):
    pass


class ComponentRuntime(Protocol):
    """What a component may use of the process it runs in (implemented by
    :class:`~palaestra.core.supervision.runtime.Runtime`)."""

    run_dir: str
    ctx: zmq.asyncio.Context
    links: Links

    def start_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` alongside; an exception in it fails the component."""
        ...

    async def send_parent(self, message: Msg) -> None:
        """Send ``message`` to the parent (nothing in a process without one)."""
        ...

    def bind(self, kind: int, role: str) -> tuple[zmq.asyncio.Socket, str]:
        """Bind a new socket of ``kind`` on a private ipc endpoint (and a CURVE tcp one in a
        run across hosts); returns it and the endpoint to announce."""
        ...


@dataclass(slots=True, eq=False)
class ChildExit:
    """Event: a child process ended. ``exit_code`` < 0 means killed by signal ``-exit_code``;
    ``host`` says where a launched child ran (see :mod:`palaestra.core.supervision.launch`), "" for
    one forked here."""

    name: str
    role: str
    exit_code: int
    host: str = ""

    def describe(self) -> str:
        who = f"{self.name} on host {self.host}" if self.host else self.name
        if self.exit_code < 0:
            import signal

            try:
                sig = signal.Signals(-self.exit_code).name
            except ValueError:
                sig = str(-self.exit_code)
            return f"{who} was killed by {sig}"
        return f"{who} exited with code {self.exit_code}"


F = TypeVar("F", bound=Callable[..., Any])


def on(message_type: type) -> Callable[[F], F]:
    """Declare the decorated method as the handler of ``message_type``.

    The method takes the message (and, for messages arriving on a ROUTER socket, the sender's
    routing id as keyword ``sender``) and returns a reply message or None; it may be async.
    """

    def mark(func: F) -> F:
        func.__dict__.setdefault("_handles", []).append(message_type)
        return func

    return mark


class Component:
    """Base of every long-lived component: a state machine with typed handlers.

    Subclasses declare handlers with :func:`on`, and may override :meth:`on_child_exit` and
    :meth:`on_signal`. A component ends by calling :meth:`finish` or :meth:`fail`.
    """

    handlers: ClassVar[dict[type, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.handlers = _handler_table(cls)

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = State.PRISTINE
        self.error: ErrorInfo | None = None
        self.stop_reason = ""
        self._listeners: list[Callable[[State], None]] = []

    # --- state -------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[State], None]) -> None:
        """Call ``listener(new_state)`` after every transition."""
        self._listeners.append(listener)

    def transition(self, to: State) -> None:
        if to is self.state:
            return
        if to not in TRANSITIONS[self.state]:
            raise InvalidTransition(f"{self.name}: {self.state.name} -> {to.name} is not allowed")
        LOG.debug("%s: %s -> %s", self.name, self.state.name, to.name)
        self.state = to
        for listener in self._listeners:
            listener(to)

    @property
    def ended(self) -> bool:
        return self.state in (State.FINISHED, State.ERROR)

    def start(self) -> None:
        self.transition(State.RUNNING)

    def stop(self, reason: str = "") -> None:
        """Begin a clean stop (idempotent)."""
        if self.state in (State.PRISTINE, State.RUNNING):
            self.stop_reason = reason
            self.transition(State.STOPPING)

    def finish(self) -> None:
        if not self.ended:
            if self.state is State.PRISTINE:
                self.transition(State.STOPPING)
            self.transition(State.FINISHED)

    def fail(self, error: ErrorInfo) -> None:
        """Move to ERROR, keeping the first error (later ones are consequences)."""
        if self.state is State.ERROR:
            return
        if self.state is State.FINISHED:
            LOG.warning("%s failed after finishing: %s", self.name, error.describe())
            return
        self.error = error
        self.transition(State.ERROR)

    # --- events ------------------------------------------------------------------------

    def handler_for(self, message: object) -> Callable[..., Any] | None:
        attr = self.handlers.get(type(message))
        return getattr(self, attr) if attr is not None else None

    async def dispatch(self, message: object, **routing: Any) -> Any:
        """Run the handler for ``message``; an unhandled type is an error of the sender."""
        handler = self.handler_for(message)
        if handler is None:
            raise TypeError(f"{self.name} has no handler for {type(message).__name__}")
        result = handler(message, **routing) if routing else handler(message)
        if inspect.isawaitable(result):
            result = await result
        return result

    def on_child_exit(self, event: ChildExit) -> Awaitable[None] | None:
        """A child ended. The default: exit 0 is fine unless we are still relying on it;
        anything else moves this component to ERROR with the child's reason."""
        if event.exit_code != 0 and not self.ended:
            self.fail(
                ErrorInfo(
                    process=event.name,
                    kind="ProcessDied",
                    message=event.describe(),
                    exit_code=event.exit_code,
                )
            )
        return None

    @on(Shutdown)
    async def handle_shutdown(self, message: Shutdown) -> None:
        """The parent asks us to stop: :meth:`close`, then end (the runtime then stops our
        children)."""
        self.stop(message.reason)
        await self.close()
        self.finish()

    async def close(self) -> None:
        """Finish what is in flight before a clean stop (flush, dump); the default does nothing."""

    async def setup(self, runtime: ComponentRuntime) -> dict[str, str]:
        """Bind sockets and prepare; returns the endpoints announced to the parent."""
        return {}

    async def teardown(self) -> None:
        """Release what :meth:`setup` acquired; called once, whatever the end state."""

    def on_signal(self, signum: int) -> Awaitable[Any] | None:
        """SIGTERM (or SIGINT in the executor): stop cleanly, as if the parent asked."""
        import signal

        return self.dispatch(Shutdown(reason=f"received {signal.Signals(signum).name}"))


def _handler_table(cls: type) -> dict[type, str]:
    """Message type -> handler method name, subclasses overriding their bases."""
    table: dict[type, str] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            for message_type in getattr(value, "_handles", ()):
                table[message_type] = attr
    return table


Component.handlers = _handler_table(Component)
