"""A client of palaestra's external-environment protocol (version 1): serves worlds over ZMQ.

This module imports nothing of palaestra: only pyzmq and json (and msgpack, if it is
installed, for palaestra's ``encoding: msgpack``). Copy it next to your simulator. The
protocol is described in palaestra's ``docs/external-environments.md``.

A world is any object with ``describe()``, ``reset()`` and ``step(setpoints)`` (see
:class:`World`); :class:`Server` makes one world per palaestra environment that greets it
(``hello``) and answers its commands::

    server = Server(lambda hello: MyWorld(hello["seed"], hello.get("config") or {}))
    server.connect("tcp://palaestra-host:5555")   # or server.bind("tcp://*:5555")
    server.serve()
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import zmq

try:  # optional: only for palaestra's ``encoding: msgpack``
    import msgpack  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on what is installed
    msgpack = None

PROTOCOL_VERSION = 1
"""The protocol version this client speaks."""
SUPPORTED_VERSIONS = (1,)


class World(Protocol):
    """What :class:`Server` needs of a world.

    ``describe()`` returns ``{"name": str, "sensors": [...], "actuators": [...],
    "rewards": [...]}``, each item ``{"uid": str, "space": {...}}`` (palaestra's JSON form of
    a space; an actuator may add its default set point as ``"value"``). ``reset()`` starts an
    episode and returns the sensor values by uid. ``step(setpoints)`` applies the set points
    (by actuator uid) and returns ``(sensors, rewards, terminated, truncated)``.
    """

    def describe(self) -> dict[str, Any]: ...

    def reset(self) -> dict[str, Any]: ...

    def step(
        self, setpoints: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], bool, bool]: ...


class ProtocolError(Exception):
    """A command this client cannot carry out; its text goes back as the error."""


@dataclass
class Session:
    """One palaestra environment's world and where it stands."""

    world: World
    episode: int = -1
    step: int = 0
    last_id: int | None = None
    last_answer: dict[str, Any] | None = None
    encoding: str = "json"


@dataclass
class Server:
    """Answers palaestra's commands on one ZMQ ROUTER socket, one world per session.

    Args:
        make_world: Builds a world from palaestra's ``hello`` (its ``seed``, ``config``,
            ``environment`` and ``worker``).
        exit_on_close: End :meth:`serve` when a ``close`` leaves no session open.
    """

    make_world: Callable[[dict[str, Any]], World]
    exit_on_close: bool = False
    sessions: dict[str, Session] = field(default_factory=dict)
    peers: dict[bytes, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.context = zmq.Context()
        self.socket = self._new_socket()
        self.address = ""
        self.binding = False

    def _new_socket(self) -> zmq.Socket[bytes]:
        sock: zmq.Socket[bytes] = self.context.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        return sock

    def connect(self, address: str) -> None:
        """Connect to palaestra, which binds ``address`` (``bind:`` in its params)."""
        self.address, self.binding = address, False
        self.socket.connect(address)

    def bind(self, address: str) -> None:
        """Bind ``address``; palaestra connects to it (``connect:`` in its params)."""
        self.address, self.binding = address, True
        self.socket.bind(address)

    def reopen(self) -> None:
        """Drop the connection and open it again (the sessions stay): what a client does
        after a network failure. palaestra greets it again and the episodes continue."""
        self.socket.close(linger=0)
        self.socket = self._new_socket()
        if self.binding:
            self.socket.bind(self.address)
        else:
            self.socket.connect(self.address)

    def serve(self) -> None:
        """Answer commands until ``close`` ends the last session (with ``exit_on_close``)."""
        try:
            while True:
                frames = self.socket.recv_multipart()
                if not self.handle_frames(frames):
                    return
        finally:
            self.socket.close(linger=200)
            self.context.term()

    def handle_frames(self, frames: list[bytes]) -> bool:
        """Answer one message; False when the server should stop."""
        peer, payloads = frames[0], frames[1:]
        encoding = "json"
        try:
            if len(payloads) != 1:
                raise ProtocolError(f"expected one frame per command, got {len(payloads)}")
            encoding, command = decode(payloads[0])
            answer = self.answer(peer, command, encoding)
        except ProtocolError as exc:
            answer = error(None, str(exc))
        try:
            payload = encode(answer, encoding)
        except (TypeError, ValueError) as exc:  # the world gave what JSON cannot hold: say so
            text = f"the world's answer cannot be written as {encoding}: {exc}"
            payload = encode(error(answer.get("id"), text), encoding)
        self.socket.send_multipart([peer, payload])
        return not (self.exit_on_close and answer.get("closed") and not self.sessions)

    def answer(self, peer: bytes, command: dict[str, Any], encoding: str) -> dict[str, Any]:
        """The answer to one decoded command of ``peer``."""
        command_id = command.get("id")
        if not isinstance(command_id, int) or isinstance(command_id, bool):
            raise ProtocolError(f"a command needs an integer 'id', got {command_id!r}")
        name = command.get("command")
        if name == "hello":
            return self.hello(peer, command_id, command, encoding)
        session_id = self.peers.get(peer)
        session = self.sessions.get(session_id) if session_id is not None else None
        if session is None:
            return error(command_id, f"'{name}' before 'hello': greet first")
        if command_id == session.last_id and session.last_answer is not None:
            return session.last_answer  # sent again after a reconnect: not carried out twice
        try:
            if name == "reset":
                answer = {"id": command_id, "status": "ok", "sensors": session.world.reset()}
                session.episode += 1
                session.step = 0
            elif name == "step":
                answer = self.step(session, command_id, command)
            elif name == "close":
                self.sessions.pop(str(session_id), None)
                self.peers.pop(peer, None)
                return {"id": command_id, "status": "ok", "closed": True}
            else:
                return error(command_id, f"unknown command {name!r}")
        except ProtocolError as exc:
            return error(command_id, str(exc))
        except Exception as exc:  # noqa: BLE001 - the world's failure goes back as text
            return error(command_id, f"{type(exc).__name__}: {exc}")
        session.last_id, session.last_answer = command_id, answer
        return answer

    def hello(
        self, peer: bytes, command_id: int, command: dict[str, Any], encoding: str
    ) -> dict[str, Any]:
        version = command.get("version")
        if version not in SUPPORTED_VERSIONS:
            return error(
                command_id,
                f"protocol version {version!r} is not supported; this client speaks "
                f"{', '.join(map(str, SUPPORTED_VERSIONS))}",
            )
        session_id = command.get("session")
        if not isinstance(session_id, str) or not session_id:
            return error(command_id, "'hello' needs a 'session' string")
        resume = command.get("resume")
        session = self.sessions.get(session_id)
        resumed = isinstance(resume, dict) and session is not None
        if not resumed:
            try:
                session = Session(self.make_world(command), encoding=encoding)
            except Exception as exc:  # noqa: BLE001 - a world that cannot be made says why
                return error(command_id, f"cannot make the world: {type(exc).__name__}: {exc}")
            self.sessions[session_id] = session
        assert session is not None
        for other, known in list(self.peers.items()):
            if known == session_id:
                del self.peers[other]
        self.peers[peer] = session_id
        return {
            "id": command_id,
            "status": "ok",
            "version": PROTOCOL_VERSION,
            "resumed": resumed,
            "last_id": session.last_id if resumed else None,
            "episode": session.episode,
            "step": session.step,
            **session.world.describe(),
        }

    def step(self, session: Session, command_id: int, command: dict[str, Any]) -> dict[str, Any]:
        setpoints = command.get("setpoints")
        if not isinstance(setpoints, dict):
            raise ProtocolError("'step' needs 'setpoints', an object by actuator uid")
        sensors, rewards, terminated, truncated = session.world.step(setpoints)
        session.step += 1
        return {
            "id": command_id,
            "status": "ok",
            "sensors": sensors,
            "rewards": rewards,
            "terminated": bool(terminated),
            "truncated": bool(truncated) and not terminated,
        }


def error(command_id: int | None, text: str) -> dict[str, Any]:
    """An error answer."""
    return {"id": command_id, "status": "error", "error": text}


def decode(payload: bytes) -> tuple[str, dict[str, Any]]:
    """The encoding of ``payload`` (``json`` or ``msgpack``, told by its first byte) and the
    command it holds."""
    if payload[:1] == b"{":
        try:
            value = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"not JSON: {exc}") from None
        encoding = "json"
    else:
        if msgpack is None:
            raise ProtocolError(
                "not a JSON object, and msgpack is not installed here: use encoding: json"
            )
        try:
            value = msgpack.unpackb(payload)
        except Exception as exc:  # noqa: BLE001 - any malformed input
            raise ProtocolError(f"neither JSON nor msgpack: {exc}") from None
        encoding = "msgpack"
    if not isinstance(value, dict):
        raise ProtocolError(f"a command is an object, got {type(value).__name__}")
    return encoding, from_strict(value)


def encode(answer: dict[str, Any], encoding: str) -> bytes:
    """``answer`` in ``encoding``; non-finite floats as ``"inf"``, ``"-inf"``, ``"nan"``."""
    plain = to_strict(answer)
    if encoding == "msgpack" and msgpack is not None:
        return bytes(msgpack.packb(plain))
    return json.dumps(plain, separators=(",", ":"), allow_nan=False).encode("utf-8")


def to_strict(value: Any) -> Any:
    """``value`` with non-finite floats written as the protocol's strings, and numpy's numbers
    and arrays (a simulator's ``float32``) as plain Python ones."""
    if hasattr(value, "tolist"):  # (numpy's, without importing it)
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list | tuple):
        return [to_strict(v) for v in value]
    if isinstance(value, dict):
        return {k: to_strict(v) for k, v in value.items()}
    return value


NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def from_strict(value: Any) -> Any:
    """``value`` with the protocol's strings for non-finite floats read back as floats."""
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    if isinstance(value, list):
        return [from_strict(v) for v in value]
    if isinstance(value, dict):
        return {k: from_strict(v) for k, v in value.items()}
    return value


def main_arguments(description: str, argv: list[str] | None = None) -> Any:
    """The command line every reference world takes: ``--connect`` or ``--bind``."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--connect", metavar="ADDRESS", help="palaestra binds it (bind:)")
    where.add_argument("--bind", metavar="ADDRESS", help="palaestra connects to it (connect:)")
    parser.add_argument(
        "--exit-on-close", action="store_true", help="end when the last session is closed"
    )
    return parser.parse_args(argv)
