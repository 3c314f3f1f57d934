"""ExternalEnvironment: a world in another program, spoken to over ZMQ.

Run file::

    environments:
      - environment:
          name: palaestra.environment.external:ExternalEnvironment
          uid: room
          params:
            connect: tcp://simulator:5555    # or bind: tcp://*:5555 (the client connects)
            timeout: 10                       # seconds per answer
            connect_timeout: 30               # seconds until a client is there and ready
            reconnect_timeout: 10             # seconds a client that hung up has to return
            world: {steps: 20}                # passed to the client in its hello
            offline: false                    # true: start palaestra's own simulated world

The protocol (version :data:`PROTOCOL_VERSION`) is in ``docs/external-environments.md``:
palaestra's DEALER socket sends commands (``hello``, ``reset``, ``step``, ``close``), each with
an ``id``, and the client's ROUTER socket answers each with ``status`` ``ok`` (and the
command's results) or ``error`` (and the text). The client declares its sensors, actuators and
rewards (palaestra's JSON form of spaces) in its answer to ``hello``.

With ``offline: true`` the environment starts the reference client's simulated world
(``palaestra/clients/python/heater_world.py``) as its own child process on a private ipc
address, and stops it at its end; ``connect`` and ``bind`` are then ignored.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import zmq
from zmq.utils.monitor import recv_monitor_message

from palaestra.core.errors import InvalidInputError, PalaestraError
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.nonfinite import from_strict_json, to_strict_json
from palaestra.core.spaces import Space
from palaestra.environment.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.environment.spaces_map import default_value

LOG = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
"""The protocol version palaestra speaks (``hello``'s ``version``)."""
CLIENTS = Path(__file__).resolve().parent.parent / "clients"
OFFLINE_WORLD = CLIENTS / "python" / "heater_world.py"
"""The reference client's simulated world, which ``offline: true`` starts."""
ENCODINGS = ("json", "msgpack")
SCHEMES = ("tcp://", "ipc://")
_EVENTS = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED
_STOP_SECONDS = 2.0


class ExternalEnvironmentError(PalaestraError):
    """The external environment failed: it never came, hung up, answered an error or
    something that is not the protocol. The message names the environment, its address and
    what happened (exit code 1: the run failed)."""


class ExternalEnvironment(Environment):
    """An environment whose world runs in another program that speaks palaestra's protocol.

    Args:
        uid: The environment's uid in the run file.
        broker_uri: Unused (palaestrAI's argument).
        seed: The seed when palaestra gives none; sent to the client in ``hello``.
        connect: The client's address (it binds): ``tcp://host:port`` or ``ipc://path``.
        bind: An address palaestra binds; the client connects to it. ``{worker}`` in an
            address is replaced by the worker's index (several workers cannot bind one
            address).
        timeout: Seconds the client may take to answer one command.
        connect_timeout: Seconds until a client is connected and has answered ``hello``.
        reconnect_timeout: Seconds a client that hung up has to come back (0: fail at
            once); see the protocol's reconnect rule.
        heartbeat: Seconds between ZMTP heartbeats (ZMQ's own, answered by libzmq itself): a
            peer silent for three of them counts as hung up. 0 turns them off.
        world: Anything JSON-able, sent to the client as ``hello``'s ``config``.
        encoding: ``json`` (every client reads it) or ``msgpack``.
        offline: Start the reference client's simulated world as a child and talk to it.

    Raises:
        InvalidInputError: A param is missing or wrong (exit code 2).
    """

    check_ids_by_starting = False  # a client may take one greeting only: ids checked at start
    replay_deterministic = False  # a world outside palaestra promises nothing

    def __init__(
        self,
        uid: str | None = None,
        broker_uri: str | None = None,
        seed: int = 0,
        connect: str | None = None,
        bind: str | None = None,
        timeout: float = 10.0,
        connect_timeout: float = 30.0,
        reconnect_timeout: float = 10.0,
        heartbeat: float = 1.0,
        world: Any = None,
        encoding: str = "json",
        offline: bool = False,
    ) -> None:
        super().__init__(uid, broker_uri, seed)
        self.where = f"environment '{uid or ''}' (ExternalEnvironment)"
        self.timeout = _seconds(self.where, "timeout", timeout, positive=True)
        self.connect_timeout = _seconds(self.where, "connect_timeout", connect_timeout, True)
        self.reconnect_timeout = _seconds(self.where, "reconnect_timeout", reconnect_timeout)
        self.heartbeat = _seconds(self.where, "heartbeat", heartbeat)
        if encoding not in ENCODINGS:
            raise InvalidInputError(
                f"{self.where}: params.encoding: expected one of {', '.join(ENCODINGS)}, "
                f"got {encoding!r}"
            )
        if not isinstance(offline, bool):
            raise InvalidInputError(f"{self.where}: params.offline: expected true or false")
        self.encoding = encoding
        try:
            self.config = msgspec.json.decode(msgspec.json.encode(world))
        except (TypeError, msgspec.EncodeError) as exc:
            raise InvalidInputError(
                f"{self.where}: params.world: expected JSON-able data, got {world!r} ({exc})"
            ) from None
        self.offline = offline
        self.child: subprocess.Popen[bytes] | None = None
        self.private_dir: str | None = None
        if offline:
            if connect is not None or bind is not None:
                LOG.info("%s: offline: true, so connect/bind are not used", self.where)
            self.private_dir = tempfile.mkdtemp(prefix="palaestra-external-")
            self.address_template = f"ipc://{self.private_dir}/world.sock"
            self.binding = True
        else:
            if (connect is None) == (bind is None):
                raise InvalidInputError(
                    f"{self.where}: params: give exactly one of connect (the client binds an "
                    "address) and bind (palaestra binds, the client connects), or offline: true"
                )
            address = connect if connect is not None else bind
            key = "connect" if connect is not None else "bind"
            if not isinstance(address, str) or not address.startswith(SCHEMES):
                raise InvalidInputError(
                    f"{self.where}: params.{key}: expected an address like tcp://host:port or "
                    f"ipc:///path, got {address!r}"
                )
            self.address_template = address
            self.binding = bind is not None
        self.address = self.address_template
        self.session = secrets.token_hex(8)
        self.lock = threading.Lock()  # held while talking to the client (the hot thread)
        self.ctx: zmq.Context[zmq.Socket[bytes]] | None = None
        self.socket: zmq.Socket[bytes] | None = None
        self.monitor: zmq.Socket[bytes] | None = None
        self.peers = 0
        self.lost = False  # the client hung up and was not greeted again yet
        self.last_id = 0
        self.sensor_spaces: dict[str, Space] = {}
        self.actuator_spaces: dict[str, Space] = {}
        self.actuator_defaults: dict[str, Any] = {}
        self.reward_spaces: dict[str, Space] = {}
        self.client_name = ""
        self.episode = -1
        self.step = 0
        if offline:
            self._start_offline_world()  # here: the main thread, so PDEATHSIG holds

    # --- the Environment contract ----------------------------------------------------------

    def start_environment(self) -> EnvironmentBaseline:
        """Greet the client the first time, then ``reset``: a new episode."""
        with self.lock:
            if self.socket is None:
                self._open()
            answer = self._call("reset", {})
            assert answer is not None  # (only a step is cut short)
            self.episode += 1
            self.step = 0
            values = self._values(answer, "sensors", self.sensor_spaces, "reset", every=True)
            return EnvironmentBaseline(
                [SensorInformation(v, self.sensor_spaces[u], u) for u, v in values.items()],
                [
                    ActuatorInformation(self.actuator_defaults[u], space, u)
                    for u, space in self.actuator_spaces.items()
                ],
            )

    def update(self, actuators: Sequence[ActuatorInformation]) -> EnvironmentState:
        """Send the set points (``step``); the answer's sensors, rewards and the end."""
        with self.lock:
            setpoints: dict[str, Any] = {}
            for actuator in actuators:
                uid = str(actuator.uid)
                space = self.actuator_spaces.get(uid)
                value = actuator.value
                setpoints[uid] = space.to_json_value(value) if space is not None else value
            answer = self._call("step", {"setpoints": to_strict_json(setpoints)})
            self.step += 1
            if answer is None:  # the client came back without the world: the episode is cut
                LOG.warning(
                    "%s: the client came back without its world; episode %d ends at step %d "
                    "(truncated)",
                    self._who(),
                    self.episode,
                    self.step,
                )
                return EnvironmentState([], [], True, terminated=False, truncated=True)
            return self._state(answer)

    def shutdown(self) -> bool:
        """Say ``close`` to the client, close the socket, stop the offline world."""
        if self.lock.acquire(timeout=0.1):  # else the hot thread still waits on the client
            try:
                if self.socket is not None and not self.lost and self.peers > 0:
                    with contextlib.suppress(ExternalEnvironmentError):
                        self._request(self._next_id(), "close", {}, min(self.timeout, 2.0))
                self._close_socket()
            finally:
                self.lock.release()
        self._stop_offline_world()
        return True

    # --- talking to the client ------------------------------------------------------------

    def _open(self) -> None:
        """Bind or connect, wait for the client's connection and greet it."""
        context = self.context
        worker = context.worker if context is not None else 0
        self.address = self.address_template.replace("{worker}", str(worker))
        self.ctx = zmq.Context()
        sock: zmq.Socket[bytes] = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # no queueing for a client that is not there
        sock.setsockopt(zmq.SNDTIMEO, 1000)
        sock.setsockopt(zmq.ROUTING_ID, f"{self.uid}/{worker}/{self.session}".encode())
        if self.heartbeat > 0:
            sock.setsockopt(zmq.HEARTBEAT_IVL, int(self.heartbeat * 1000))
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(self.heartbeat * 3000))
        self.socket = sock
        self.monitor = sock.get_monitor_socket(_EVENTS)
        try:
            if self.binding:
                sock.bind(self.address)
            else:
                sock.connect(self.address)
        except zmq.ZMQError as exc:
            verb = "bind" if self.binding else "connect to"
            raise self._error(f"cannot {verb} {self.address}: {exc}") from None
        deadline = time.monotonic() + self.connect_timeout
        if not self._await_peer(deadline):
            raise self._error(self._no_client(self.connect_timeout, "connect_timeout"))
        self._greet(deadline, resume=False)

    def _no_client(self, seconds: float, setting: str) -> str:
        if self.offline:
            what = f"the offline world did not greet at {self.address} within {seconds:g} s"
        elif self.binding:
            what = (
                f"no client connected to {self.address} within {seconds:g} s ({setting}); "
                f"start it with --connect {self.address}"
            )
        else:
            what = (
                f"no client answered at {self.address} within {seconds:g} s ({setting}); "
                "is it running and bound to that address?"
            )
        return what + self._child_said()

    def _await_peer(self, deadline: float) -> bool:
        """Wait until a client is connected (ZMQ handshake done); False at the deadline."""
        while self.peers <= 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._events(left):
                return self.peers > 0
        return True

    def _events(self, seconds: float) -> bool:
        """Take the monitor's events of the next ``seconds``; False if none came."""
        assert self.monitor is not None
        if not self.monitor.poll(max(0, int(seconds * 1000))):
            return False
        while self.monitor.poll(0):
            self._event(recv_monitor_message(self.monitor))
        return True

    def _event(self, event: Mapping[str, Any]) -> None:
        if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.peers += 1
        elif event["event"] == zmq.EVENT_DISCONNECTED:
            self.peers = max(0, self.peers - 1)

    def _greet(self, deadline: float, resume: bool) -> bool:
        """Send ``hello`` and take the client's declaration; whether it resumed the session."""
        context = self.context
        fields: dict[str, Any] = {
            "version": PROTOCOL_VERSION,
            "session": self.session,
            "environment": self.uid,
            "worker": context.worker if context is not None else 0,
            "seed": int(self.seed),
            "config": self.config,
            "resume": {"episode": self.episode, "step": self.step} if resume else None,
        }
        answer = self._request(
            self._next_id(), "hello", fields, max(0.0, deadline - time.monotonic())
        )
        if answer is None:
            raise self._error("the client hung up while it was greeted" + self._child_said())
        version = answer.get("version")
        if version != PROTOCOL_VERSION:
            raise self._error(
                f"the client speaks protocol version {version!r}, palaestra speaks "
                f"{PROTOCOL_VERSION}; update the client (or palaestra) so that they match"
            )
        declared = self._declaration(answer)
        if resume and declared != (self.sensor_spaces, self.actuator_spaces, self.reward_spaces):
            raise self._error(
                "the client came back with other sensors, actuators or rewards than it "
                "declared before"
            )
        self.sensor_spaces, self.actuator_spaces, self.reward_spaces = declared
        self.client_name = str(answer.get("name") or "")
        self.lost = False
        return answer.get("resumed") is True

    def _declaration(
        self, answer: Mapping[str, Any]
    ) -> tuple[dict[str, Space], dict[str, Space], dict[str, Space]]:
        spaces: list[dict[str, Space]] = []
        for key in ("sensors", "actuators", "rewards"):
            items = answer.get(key, [] if key == "rewards" else None)
            if not isinstance(items, list):
                raise self._garbage("hello", f"'{key}' is {items!r}, expected a list")
            found: dict[str, Space] = {}
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("uid"), str):
                    raise self._garbage("hello", f"{key}: {item!r} has no string 'uid'")
                uid = item["uid"]
                if uid in found:
                    raise self._garbage("hello", f"{key}: '{uid}' is declared twice")
                try:
                    found[uid] = Space.from_dict(from_strict_json(item.get("space")))
                except (ValueError, TypeError) as exc:
                    raise self._garbage("hello", f"{key} '{uid}': space: {exc}") from None
                if key == "actuators":
                    self.actuator_defaults[uid] = self._default(uid, found[uid], item)
            spaces.append(found)
        if not spaces[0] or not spaces[1]:
            raise self._garbage("hello", "it declared no sensors or no actuators")
        return spaces[0], spaces[1], spaces[2]

    def _default(self, uid: str, space: Space, item: Mapping[str, Any]) -> Any:
        if "value" not in item:
            return default_value(space)
        try:
            value = space.from_json_value(from_strict_json(item["value"]))
        except (ValueError, TypeError) as exc:
            raise self._garbage("hello", f"actuator '{uid}': value: {exc}") from None
        if not space.contains(value):
            raise self._garbage(
                "hello", f"actuator '{uid}': value {item['value']!r} is not in {space}"
            )
        return value

    def _call(self, command: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        """Send a command and return the client's answer (status ok).

        A client that hung up has ``reconnect_timeout`` seconds to come back: it is greeted
        again and the command sent again (same id), unless it lost its world (a ``step``
        then returns None: the episode is cut).
        """
        command_id = self._next_id()
        while True:
            if self.lost or self.peers <= 0:
                resumed = self._come_back(command, command_id)
                if not resumed and command == "step":
                    return None
            answer = self._request(command_id, command, fields, self.timeout)
            if answer is not None:
                return answer
            self.lost = True

    def _come_back(self, command: str, command_id: int) -> bool:
        """Wait for the client to return and greet it again; whether it kept its world."""
        self.lost = True
        LOG.warning(
            "%s: the client hung up before answering %s (command %d); waiting up to %g s "
            "(reconnect_timeout) for it to come back",
            self._who(),
            command,
            command_id,
            self.reconnect_timeout,
        )
        deadline = time.monotonic() + self.reconnect_timeout
        if not self._await_peer(deadline):
            raise self._error(
                f"the client hung up during {self._what(command, command_id)} and did not "
                f"come back within {self.reconnect_timeout:g} s (reconnect_timeout)"
                + self._child_said()
            )
        resumed = self._greet(deadline + self.timeout, resume=True)
        LOG.warning(
            "%s: the client is back (%s)",
            self._who(),
            "it kept the episode" if resumed else "a fresh world",
        )
        return resumed

    def _request(
        self, command_id: int, command: str, fields: dict[str, Any], seconds: float
    ) -> dict[str, Any] | None:
        """One command and its answer; None if the client hung up before it answered."""
        sock = self.socket
        assert sock is not None and self.monitor is not None
        payload = self._encode({"id": command_id, "command": command, **fields})
        try:
            sock.send(payload)
        except zmq.Again:  # no client to send to
            self._events(0)
            return None
        deadline = time.monotonic() + seconds
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(self.monitor, zmq.POLLIN)
        while True:
            left = deadline - time.monotonic()
            ready = dict(poller.poll(max(0, int(left * 1000)))) if left > 0 else {}
            if not ready:
                raise self._error(
                    f"the client did not answer {self._what(command, command_id)} within "
                    f"{seconds:g} s (timeout)" + self._child_said()
                )
            if self.monitor in ready:
                self._events(0)
                if self.peers <= 0:
                    return None
            if sock in ready:
                answer = self._answer(sock.recv_multipart(), command, command_id)
                if answer is not None:
                    return answer

    def _answer(self, frames: list[bytes], command: str, command_id: int) -> dict[str, Any] | None:
        """The checked answer to ``command_id``; None for a late answer to an earlier one."""
        if len(frames) != 1:
            raise self._garbage(command, f"{len(frames)} frames, expected 1")
        raw = frames[0]
        try:
            if self.encoding == "msgpack" and raw[:1] != b"{":
                answer = msgspec.msgpack.decode(raw)
            else:
                answer = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise self._garbage(command, f"{raw[:80]!r} is not {self.encoding} ({exc})") from None
        if not isinstance(answer, dict):
            raise self._garbage(command, f"{raw[:80]!r} is not an object")
        answer_id, status = answer.get("id"), answer.get("status")
        if isinstance(answer_id, int) and answer_id < command_id:
            LOG.debug("%s: ignored a late answer to command %d", self._who(), answer_id)
            return None
        if answer_id is not None and answer_id != command_id:
            raise self._garbage(command, f"'id' is {answer_id!r}, expected {command_id}")
        if status == "error":
            text = answer.get("error")
            raise self._error(
                f"the client answered {self._what(command, command_id)} with an error: {text}"
            )
        if status != "ok" or answer_id is None:
            raise self._garbage(command, f"{raw[:200]!r} has no 'id' and 'status' ok or error")
        return answer

    def _encode(self, message: dict[str, Any]) -> bytes:
        if self.encoding == "msgpack":
            return msgspec.msgpack.encode(message)
        return msgspec.json.encode(message)

    def _next_id(self) -> int:
        self.last_id += 1
        return self.last_id

    # --- answers into palaestra's objects ---------------------------------------------------

    def _values(
        self,
        answer: Mapping[str, Any],
        key: str,
        spaces: Mapping[str, Space],
        command: str,
        every: bool,
    ) -> dict[str, Any]:
        """``answer[key]`` (values by uid) as native values of ``spaces``; ``every``: each
        declared uid must be there."""
        given = answer.get(key, {})
        if not isinstance(given, dict):
            raise self._garbage(command, f"'{key}' is {given!r}, expected an object by uid")
        values: dict[str, Any] = {}
        for uid, space in spaces.items():
            if uid not in given:
                if every:
                    raise self._garbage(command, f"'{key}' has no '{uid}'")
                continue
            try:
                values[uid] = space.from_json_value(from_strict_json(given[uid]))
            except (ValueError, TypeError) as exc:
                raise self._garbage(
                    command, f"{key} '{uid}': {given[uid]!r} is no value of {space} ({exc})"
                ) from None
        unknown = [uid for uid in given if uid not in spaces]
        if unknown:
            raise self._garbage(command, f"'{key}' has undeclared {', '.join(map(repr, unknown))}")
        return values

    def _state(self, answer: Mapping[str, Any]) -> EnvironmentState:
        terminated, truncated = answer.get("terminated", False), answer.get("truncated", False)
        if not isinstance(terminated, bool) or not isinstance(truncated, bool):
            raise self._garbage("step", "'terminated' and 'truncated' must be true or false")
        if terminated and truncated:
            raise self._garbage("step", "'terminated' and 'truncated' are both true")
        done = terminated or truncated
        sensors = self._values(answer, "sensors", self.sensor_spaces, "step", every=not done)
        rewards = self._values(answer, "rewards", self.reward_spaces, "step", every=True)
        return EnvironmentState(
            [SensorInformation(v, self.sensor_spaces[u], u) for u, v in sensors.items()],
            [RewardInformation(v, self.reward_spaces[u], u) for u, v in rewards.items()],
            done,
            terminated=terminated,
            truncated=truncated,
        )

    # --- messages ---------------------------------------------------------------------------

    def _who(self) -> str:
        context = self.context
        worker = context.worker if context is not None else 0
        client = f", client '{self.client_name}'" if self.client_name else ""
        offline = "offline world " if self.offline else ""
        return (
            f"external environment '{self.uid}' (worker {worker}, {offline}{self.address}{client})"
        )

    def _what(self, command: str, command_id: int) -> str:
        """``step 4 of episode 0 (command 6)``, ``reset (command 2)``."""
        if command == "step":
            return f"step {self.step + 1} of episode {self.episode} (command {command_id})"
        return f"{command} (command {command_id})"

    def _error(self, what: str) -> ExternalEnvironmentError:
        return ExternalEnvironmentError(f"{self._who()}: {what}")

    def _garbage(self, command: str, what: str) -> ExternalEnvironmentError:
        return self._error(
            f"the answer to {command} is not palaestra's protocol (version "
            f"{PROTOCOL_VERSION}, docs/external-environments.md): {what}"
        )

    def _child_said(self) -> str:
        child = self.child
        if child is None:
            return ""
        code = child.poll()
        return (
            ""
            if code is None
            else f"; the offline world (pid {child.pid}) exited with code {code}"
        )

    # --- sockets and the offline world --------------------------------------------------------

    def _close_socket(self) -> None:
        for sock in (self.monitor, self.socket):
            if sock is not None:
                sock.close(linger=0)
        if self.ctx is not None:
            self.ctx.term()
        self.socket = self.monitor = None
        self.ctx = None

    def _start_offline_world(self) -> None:
        """Start the reference client's world; it connects to our private ipc address."""
        command = [
            sys.executable,
            str(OFFLINE_WORLD),
            "--connect",
            self.address_template,
            "--exit-on-close",
        ]
        try:
            self.child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent(),  # noqa: PLW1509 - only a prctl call
                close_fds=True,
            )
        except OSError as exc:
            self._stop_offline_world()
            raise ExternalEnvironmentError(
                f"{self.where}: cannot start the offline world {OFFLINE_WORLD}: {exc}"
            ) from None
        LOG.info("%s: started the offline world, pid %d", self.where, self.child.pid)

    def _stop_offline_world(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            try:
                child.wait(_STOP_SECONDS)  # it ends by itself after close
            except subprocess.TimeoutExpired:
                child.terminate()
                try:
                    child.wait(_STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    LOG.warning("%s: the offline world ignored SIGTERM; killed it", self.where)
                    child.kill()
                    child.wait()
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None


def _die_with_parent() -> Any:
    """A ``preexec_fn`` that makes the child get SIGKILL when its parent (thread) ends."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the run's reaper still takes it down
        return None

    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent is gone already
            os._exit(1)

    return set_death_signal


def _seconds(where: str, key: str, value: Any, positive: bool = False) -> float:
    """A param in seconds: a number >= 0 (> 0 when ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(
            f"{where}: params.{key}: expected a number of seconds, got {value!r}"
        )
    if value < 0 or (positive and value == 0):
        sign = "> 0" if positive else ">= 0"
        raise InvalidInputError(f"{where}: params.{key}: expected seconds {sign}, got {value!r}")
    return float(value)
