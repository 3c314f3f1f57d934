"""ExternalEnvironment: a world in another program, spoken to over ZMQ.

Its run file and the protocol (version :data:`PROTOCOL_VERSION`) are in
``docs/external-environments.md`` and ``docs/external-protocol.md``:
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
import logging
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from palaestra.core.errors import InvalidInputError
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.nonfinite import from_strict_json, to_strict_json
from palaestra.core.spaces import MultiBinary, Space, Tuple
from palaestra.environment.environment import Environment, EnvironmentBaseline, EnvironmentState
from palaestra.environment.external_link import (
    ENCODINGS,
    OFFLINE_WORLD,
    PROTOCOL_VERSION,
    SHARED_ADDRESS,
    ExternalEnvironmentError,
    Link,
    OfflineWorld,
    not_the_protocol,
)
from palaestra.environment.params import choice, seconds
from palaestra.environment.spaces_map import default_value

__all__ = [
    "OFFLINE_WORLD",
    "PROTOCOL_VERSION",
    "ExternalEnvironment",
    "ExternalEnvironmentError",
]

LOG = logging.getLogger(__name__)

SCHEMES = ("tcp://", "ipc://")
_NOT_A_NUMBER = (
    'a value holds numbers only (not null, not a text; NaN and the infinities are "nan", '
    '"inf" and "-inf")'
)
READ_ERRORS = (ValueError, TypeError, OverflowError)
"""What reading a value the client sent into its space raises when it is no value of it
(``OverflowError``: ``"inf"`` or ``1e30`` for a whole number, which Python cannot convert)."""
_LOSSY = (
    "a bool is no number here, and a fraction or NaN no whole number; it would be read as "
    "{value!r}"
)


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
        world: Anything JSON-able, sent to the client as ``hello``'s ``config`` (a non-finite
            float as the protocol's ``"inf"``, ``"-inf"`` or ``"nan"``).
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
        self.timeout = seconds(self.where, "timeout", timeout, positive=True)
        self.connect_timeout = seconds(self.where, "connect_timeout", connect_timeout, True)
        self.reconnect_timeout = seconds(self.where, "reconnect_timeout", reconnect_timeout)
        self.heartbeat = seconds(self.where, "heartbeat", heartbeat)
        self.encoding = choice(self.where, "encoding", encoding, ENCODINGS)
        if not isinstance(offline, bool):
            raise InvalidInputError(f"{self.where}: params.offline: expected true or false")
        try:
            # (msgspec writes a non-finite float as null: the protocol's string instead)
            self.config = msgspec.json.decode(msgspec.json.encode(to_strict_json(world)))
        except (TypeError, msgspec.EncodeError) as exc:
            raise InvalidInputError(
                f"{self.where}: params.world: expected JSON-able data, got {world!r} ({exc})"
            ) from None
        if not offline:
            self.address_template, self.binding = _address(self.where, connect, bind)
        elif connect is not None or bind is not None:
            LOG.info("%s: offline: true, so connect/bind are not used", self.where)
        self.session = secrets.token_hex(8)
        self.lock = threading.Lock()  # held while talking to the client (the hot thread)
        self.link: Link | None = None
        self.lost = False  # the client hung up and was not greeted again yet
        self.last_id = 0
        self.sensor_spaces: dict[str, Space] = {}
        self.actuator_spaces: dict[str, Space] = {}
        self.actuator_defaults: dict[str, Any] = {}
        self.reward_spaces: dict[str, Space] = {}
        self.client_name = ""
        self.episode = -1
        self.step = 0
        # started here, on the main thread, so that it dies with this process
        self.world = OfflineWorld(self.where) if offline else None
        if self.world is not None:
            self.address_template, self.binding = self.world.address, True
        self.address = self.address_template

    # --- the Environment contract ----------------------------------------------------------

    def start_environment(self) -> EnvironmentBaseline:
        """Greet the client the first time, then ``reset``: a new episode."""
        with self.lock:
            if self.link is None:
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
                link, self.link = self.link, None
                if link is not None:
                    if not self.lost and link.peers > 0:
                        with contextlib.suppress(ExternalEnvironmentError):
                            command_id = self._next_id()
                            what = self._what("close", command_id)
                            link.request(command_id, "close", {}, min(self.timeout, 2.0), what)
                    link.close()
            finally:
                self.lock.release()
        if self.world is not None:
            self.world.stop()
        return True

    # --- the conversation --------------------------------------------------------------------

    def _open(self) -> None:
        """Bind or connect, wait for the client's connection and greet it."""
        context = self.context
        worker = context.worker if context is not None else 0
        self.address = self.address_template.replace("{worker}", str(worker))
        self.link = Link(
            self.address,
            binding=self.binding,
            encoding=self.encoding,
            heartbeat=self.heartbeat,
            routing_id=f"{self.uid}/{worker}/{self.session}".encode(),
            describe=self._who,
            postscript=self.world.said if self.world is not None else str,
        )
        deadline = time.monotonic() + self.connect_timeout
        if not self.link.await_peer(deadline):
            raise self.link.error(self._no_client())
        self.link.dropped = False  # (attempts that failed before this connection)
        self._greet(deadline, resume=False)

    def _no_client(self) -> str:
        seconds = f"{self.connect_timeout:g} s (connect_timeout)"
        if self.world is not None:
            return f"the offline world did not connect to {self.address} within {seconds}"
        if self.binding:
            shared = self.link.shared() if self.link is not None else None
            if shared == "after":  # (its clients went to that socket)
                return (
                    f"no client connected to {self.address} within {seconds}: another socket "
                    f"bound the address after palaestra did ({SHARED_ADDRESS})"
                )
            before = f" ({self.address} was bound before palaestra bound it: {SHARED_ADDRESS})"
            return (
                f"no client connected to {self.address} within {seconds}; start it with "
                f"--connect {self.address}{before if shared == 'before' else ''}"
            )
        return (
            f"no client answered at {self.address} within {seconds}; is it running and bound "
            "to that address?"
        )

    def _greet(self, deadline: float, resume: bool) -> bool:
        """Send ``hello`` and take the client's declaration; whether it resumed the session."""
        link = self._link()
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
        command_id = self._next_id()
        left = max(0.0, deadline - time.monotonic())
        answer = link.request(command_id, "hello", fields, left, self._what("hello", command_id))
        if answer is None:
            raise link.error("the client hung up while it was greeted")
        version = answer.get("version")
        if version != PROTOCOL_VERSION:
            raise link.error(
                f"the client speaks protocol version {version!r}, palaestra speaks "
                f"{PROTOCOL_VERSION}; update the client (or palaestra) so that they match"
            )
        declared = self._declaration(answer)
        if resume and declared != (self.sensor_spaces, self.actuator_spaces, self.reward_spaces):
            raise link.error(
                "the client came back with other sensors, actuators or rewards than it "
                "declared before"
            )
        self.sensor_spaces, self.actuator_spaces, self.reward_spaces = declared
        self.client_name = str(answer.get("name") or "")
        self.lost = False
        return answer.get("resumed") is True

    def _call(self, command: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        """Send a command and return the client's answer (status ok).

        A client that hung up has ``reconnect_timeout`` seconds to come back: it is greeted
        again and the command sent again (same id), unless it lost its world (a ``step``
        then returns None: the episode is cut).
        """
        link = self._link()
        command_id = self._next_id()
        what = self._what(command, command_id)
        while True:
            if self.lost:
                resumed = self._come_back(what)
                if not resumed and command == "step":
                    return None
            answer = link.request(command_id, command, fields, self.timeout, what)
            if answer is not None:
                return answer
            self.lost = True

    def _come_back(self, what: str) -> bool:
        """Wait for the client to return and greet it again; whether it kept its world."""
        link = self._link()
        self.lost = True
        LOG.warning(
            "%s: the client hung up before answering %s; waiting up to %g s "
            "(reconnect_timeout) for it to come back",
            self._who(),
            what,
            self.reconnect_timeout,
        )
        deadline = time.monotonic() + self.reconnect_timeout
        link.renew()
        if not link.await_peer(deadline):
            raise link.error(
                f"the client hung up during {what} and did not come back within "
                f"{self.reconnect_timeout:g} s (reconnect_timeout)"
            )
        resumed = self._greet(deadline + self.timeout, resume=True)
        LOG.warning(
            "%s: the client is back (%s)",
            self._who(),
            "it kept the episode" if resumed else "a fresh world",
        )
        return resumed

    def _link(self) -> Link:
        link = self.link
        if link is None:
            raise ExternalEnvironmentError(f"{self._who()}: the connection is closed")
        return link

    def _next_id(self) -> int:
        self.last_id += 1
        return self.last_id

    # --- answers into palaestra's objects ---------------------------------------------------

    def _declaration(
        self, answer: Mapping[str, Any]
    ) -> tuple[dict[str, Space], dict[str, Space], dict[str, Space]]:
        """The sensors, actuators and rewards ``hello``'s answer declares, by uid."""
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
        """An actuator's set point before an agent sets one: its declared ``value``."""
        if "value" not in item:
            return default_value(space)
        try:
            value = _read_value(space, item["value"])
        except READ_ERRORS as exc:
            raise self._garbage("hello", f"actuator '{uid}': value: {exc}") from None
        if not space.contains(value):
            raise self._garbage(
                "hello", f"actuator '{uid}': value {item['value']!r} is not in {space}"
            )
        return value

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
                values[uid] = _read_value(space, given[uid])
            except READ_ERRORS as exc:
                raise self._garbage(
                    command, f"{key} '{uid}': {given[uid]!r} is no value of {space} ({exc})"
                ) from None
        unknown = [uid for uid in given if uid not in spaces]
        if unknown:
            raise self._garbage(command, f"'{key}' has undeclared {', '.join(map(repr, unknown))}")
        return values

    def _state(self, answer: Mapping[str, Any]) -> EnvironmentState:
        """``step``'s answer as palaestra's state."""
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
        """``external environment 'room' (worker 0, tcp://..., client 'heater')``."""
        context = self.context
        worker = context.worker if context is not None else 0
        client = f", client '{self.client_name}'" if self.client_name else ""
        where = f"{'offline world ' if self.world is not None else ''}{self.address}{client}"
        return f"external environment '{self.uid}' (worker {worker}, {where})"

    def _what(self, command: str, command_id: int) -> str:
        """``step 4 of episode 0 (command 6)``, ``reset (command 2)``."""
        if command == "step":
            return f"step {self.step + 1} of episode {self.episode} (command {command_id})"
        return f"{command} (command {command_id})"

    def _garbage(self, command: str, what: str) -> ExternalEnvironmentError:
        if self.link is not None:
            return self.link.garbage(command, what)
        return ExternalEnvironmentError(f"{self._who()}: {not_the_protocol(command, what)}")


def _read_value(space: Space, sent: Any) -> Any:
    """A value the client sent (strict JSON) read into ``space``.

    Raises:
        ValueError: It is not one of the space's: ``null`` or a text, which no space holds
            (and which would be stored as they are, or read as a number), or reading it would
            change it (``1.5`` or ``true`` read as a Discrete's ``1``); or another of
            :data:`READ_ERRORS` (what reading it into the space raised).
    """
    raw = from_strict_json(sent)
    value = space.from_json_value(raw)
    problem = _misread(space, raw, value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _misread(space: Space, raw: Any, value: Any) -> str | None:
    """What is wrong with ``raw`` (a decoded JSON value) as a value of ``space``, read as
    ``value``, or None: ``null`` or a text in it (no space holds one: ``null`` would be a value
    not set, a text read as the number it spells), or reading it changed it (a fraction, NaN or
    a bool made a whole number: ``1.5`` or ``true`` read as a Discrete's ``1``)."""
    if raw is None:
        return _NOT_A_NUMBER
    if isinstance(space, Tuple):
        problems = (_misread(s, r, v) for s, r, v in zip(space.spaces, raw, value, strict=True))
        return next((p for p in problems if p is not None), None)
    given = np.asarray(raw)
    if given.dtype.kind in "US" or (given.dtype.kind == "O" and _holds_no_number(raw)):
        return _NOT_A_NUMBER  # (objects: also a whole number too large for numpy's)
    kept = np.asarray(value)
    if given.dtype.kind == "b" and not isinstance(space, MultiBinary):
        return _LOSSY.format(value=value)
    if given.dtype.kind == "f" and kept.dtype.kind in "iub" and not np.array_equal(given, kept):
        return _LOSSY.format(value=value)
    return None


def _holds_no_number(raw: Any) -> bool:
    """Whether ``raw`` (decoded JSON) is, or holds in its lists, a null or a text."""
    if isinstance(raw, list):
        return any(_holds_no_number(item) for item in raw)
    return raw is None or isinstance(raw, str)


def _address(where: str, connect: Any, bind: Any) -> tuple[str, bool]:
    """The address of ``connect`` or ``bind`` (exactly one given), and whether to bind."""
    if (connect is None) == (bind is None):
        raise InvalidInputError(
            f"{where}: params: give exactly one of connect (the client binds an address) and "
            "bind (palaestra binds, the client connects), or offline: true"
        )
    address = connect if connect is not None else bind
    key = "connect" if connect is not None else "bind"
    if not isinstance(address, str) or not address.startswith(SCHEMES):
        raise InvalidInputError(
            f"{where}: params.{key}: expected an address like tcp://host:port or ipc:///path, "
            f"got {address!r}"
        )
    return address, bind is not None
