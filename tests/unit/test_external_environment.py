"""ExternalEnvironment without a client: its params, and how it reads answers (no sockets)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import zmq

from palaestra.core.errors import InvalidInputError
from palaestra.core.spaces import Space
from palaestra.environment.external import (
    ExternalEnvironment,
    ExternalEnvironmentError,
    _read_value,
)
from palaestra.environment.external_link import Link

ADDRESS = "tcp://127.0.0.1:5999"
DEGREES = {"type": "Box", "low": -50.0, "high": 100.0, "shape": [1], "dtype": "float64"}
HELLO = {
    "id": 1,
    "status": "ok",
    "version": 1,
    "sensors": [
        {"uid": "temperature", "space": DEGREES},
        {"uid": "time", "space": {"type": "Discrete", "n": 5, "start": 0}},
    ],
    "actuators": [{"uid": "power", "space": {**DEGREES, "low": 0.0, "high": 1.0}}],
    "rewards": [
        {"uid": "comfort", "space": {**DEGREES, "low": "-inf", "high": "inf", "shape": []}}
    ],
}


def declared() -> ExternalEnvironment:
    env = ExternalEnvironment(uid="room", connect=ADDRESS)
    env.sensor_spaces, env.actuator_spaces, env.reward_spaces = env._declaration(HELLO)
    return env


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, "params: give exactly one of connect"),
        ({"connect": ADDRESS, "bind": ADDRESS}, "params: give exactly one of connect"),
        ({"connect": "localhost:5555"}, "params.connect: expected an address like tcp://"),
        ({"bind": 5555}, "params.bind: expected an address like tcp://"),
        ({"connect": ADDRESS, "timeout": 0}, "params.timeout: expected seconds > 0, got 0"),
        ({"connect": ADDRESS, "reconnect_timeout": -1}, "params.reconnect_timeout: expected"),
        ({"connect": ADDRESS, "connect_timeout": "10"}, "expected a number of seconds"),
        ({"connect": ADDRESS, "encoding": "xml"}, "params.encoding: expected one of json"),
        ({"connect": ADDRESS, "offline": "yes"}, "params.offline: expected true or false"),
        ({"connect": ADDRESS, "world": {"f": object()}}, "params.world: expected JSON-able"),
    ],
)
def test_wrong_params_are_refused_naming_the_key(params: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        ExternalEnvironment(uid="room", **params)
    assert "environment 'room' (ExternalEnvironment)" in str(info.value)
    assert expected in str(info.value)
    assert info.value.exit_code == 2


def test_the_world_param_sends_non_finite_floats_as_the_protocols_strings() -> None:
    # (they were sent as null: a world: {limit: .inf} reached the client as {"limit": null})
    env = ExternalEnvironment(
        uid="room",
        connect=ADDRESS,
        world={"limit": float("inf"), "range": (-np.inf, float("nan"))},
    )
    assert env.config == {"limit": "inf", "range": ["-inf", "nan"]}


def test_the_declaration_gives_palaestras_spaces_and_default_set_points() -> None:
    env = declared()
    assert list(env.sensor_spaces) == ["temperature", "time"]
    assert env.reward_spaces["comfort"].to_dict()["low"] == "-inf"
    assert np.array_equal(env.actuator_defaults["power"], [0.0])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"sensors": "temperature"}, "'sensors' is 'temperature', expected a list"),
        ({"actuators": []}, "it declared no sensors or no actuators"),
        ({"sensors": [{"uid": "t", "space": {"type": "Boxx"}}]}, "sensors 't': space: unknown"),
        ({"sensors": [{"space": DEGREES}]}, "has no string 'uid'"),
        (
            {"actuators": [{"uid": "p", "space": DEGREES, "value": [500.0]}]},
            "actuator 'p': value [500.0] is not in Box",
        ),
        (
            {"actuators": [{"uid": "p", "space": {**DEGREES, "dtype": "int64"}, "value": [1e30]}]},
            "actuator 'p': value: Python int too large to convert to C long",
        ),
        (
            {"actuators": [{"uid": "p", "space": DEGREES, "value": None}]},
            "actuator 'p': value: a value holds numbers only (not null, not a text",
        ),
        (
            {"actuators": [{"uid": "p", "space": {"type": "Discrete", "n": 3}, "value": 0.5}]},
            "actuator 'p': value: a bool is no number here, and a fraction or NaN no whole "
            "number; it would be read as 0",
        ),
    ],
)
def test_a_wrong_declaration_is_garbage(change: dict[str, Any], expected: str) -> None:
    env = ExternalEnvironment(uid="room", connect=ADDRESS)
    with pytest.raises(ExternalEnvironmentError) as info:
        env._declaration({**HELLO, **change})
    assert "the answer to hello is not palaestra's protocol" in str(info.value)
    assert expected in str(info.value)
    assert info.value.exit_code == 1


def test_a_step_answer_becomes_an_environment_state() -> None:
    state = declared()._state(
        {
            "sensors": {"temperature": [21.5], "time": 3.0},  # (a whole number all the same)
            "rewards": {"comfort": "-inf"},
            "terminated": False,
            "truncated": True,
        }
    )
    assert [s.uid for s in state.sensor_information] == ["temperature", "time"]
    assert state.sensor_information[1].value == 3
    assert state.rewards[0].value == -np.inf
    assert (state.done, state.terminated, state.truncated) == (True, False, True)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"sensors": {"temperature": [1.0]}, "rewards": {"comfort": 0}}, "has no 'time'"),
        (
            {"sensors": {"temperature": [1.0], "time": 1, "x": 2}, "rewards": {"comfort": 0}},
            "'sensors' has undeclared 'x'",
        ),
        (
            {"sensors": {"temperature": "hot", "time": 1}, "rewards": {"comfort": 0}},
            "sensors 'temperature': 'hot' is no value of Box",
        ),
        (
            {"sensors": {"temperature": [1.0], "time": 1.5}, "rewards": {"comfort": 0}},
            "sensors 'time': 1.5 is no value of Discrete(5) (a bool is no number here, and a "
            "fraction or NaN no whole number; it would be read as 1)",
        ),
        (
            {"sensors": {"temperature": [1.0], "time": True}, "rewards": {"comfort": 0}},
            "sensors 'time': True is no value of Discrete(5)",
        ),
        (
            {"sensors": {"temperature": [1.0], "time": "nan"}, "rewards": {"comfort": 0}},
            "sensors 'time': 'nan' is no value of Discrete(5)",
        ),
        (
            {"sensors": {"temperature": [1.0], "time": 1}, "rewards": {"comfort": False}},
            "rewards 'comfort': False is no value of Box",
        ),
        # null or a text is no value: it was stored as null, or read as the number it spells
        # (a run that finished with a client's NaN sent as null, as JavaScript writes it)
        (
            {"sensors": {"temperature": None, "time": 1}, "rewards": {"comfort": 0}},
            "sensors 'temperature': None is no value of Box(low=[-50.0], high=[100.0], "
            "shape=(1,), dtype=np.float64) (a value holds numbers only (not null, not a text; "
            'NaN and the infinities are "nan", "inf" and "-inf"))',
        ),
        (
            {"sensors": {"temperature": [1.0], "time": 1}, "rewards": {"comfort": None}},
            "rewards 'comfort': None is no value of Box",
        ),
        (
            {"sensors": {"temperature": [None], "time": 1}, "rewards": {"comfort": 0}},
            "sensors 'temperature': [None] is no value of Box",
        ),
        (
            {"sensors": {"temperature": ["21.5"], "time": 1}, "rewards": {"comfort": 0}},
            "sensors 'temperature': ['21.5'] is no value of Box",
        ),
        (
            {"sensors": {"temperature": [1.0], "time": "3"}, "rewards": {"comfort": 0}},
            "sensors 'time': '3' is no value of Discrete(5) (a value holds numbers only",
        ),
        # (an OverflowError of palaestra's, with its traceback)
        (
            {"sensors": {"temperature": [1.0], "time": "inf"}, "rewards": {"comfort": 0}},
            "sensors 'time': 'inf' is no value of Discrete(5) (cannot convert float infinity to "
            "integer)",
        ),
        (
            {"sensors": {"temperature": [10**400], "time": 1}, "rewards": {"comfort": 0}},
            "is no value of Box(low=[-50.0], high=[100.0], shape=(1,), dtype=np.float64) (int "
            "too large to convert to float)",
        ),
        ({"sensors": [], "rewards": {}}, "'sensors' is [], expected an object by uid"),
        ({"terminated": True, "truncated": True}, "are both true"),
        ({"terminated": "no"}, "must be true or false"),
    ],
)
def test_a_wrong_step_answer_is_garbage(answer: dict[str, Any], expected: str) -> None:
    with pytest.raises(ExternalEnvironmentError) as info:
        declared()._state(answer)
    assert "the answer to step is not palaestra's protocol" in str(info.value)
    assert expected in str(info.value)


def test_null_or_a_text_is_no_value_of_any_space_and_a_bool_one_of_a_multibinary() -> None:
    tuple_space = Space.from_dict(
        {"type": "Tuple", "spaces": [{"type": "Discrete", "n": 3}, DEGREES]}
    )
    assert _read_value(tuple_space, [2, [1.5]])[0] == 2
    for sent in (None, [None, [1.5]], [2, None], [2, ["1.5"]]):
        with pytest.raises(ValueError, match="a value holds numbers only"):
            _read_value(tuple_space, sent)
    # a whole number too large for numpy is a number (outside Discrete(5): the world says so)
    assert _read_value(Space.from_dict({"type": "Discrete", "n": 5}), 10**30) == 10**30
    binary = Space.from_dict({"type": "MultiBinary", "n": 2})
    assert _read_value(binary, [True, 0]).tolist() == [1, 0]
    with pytest.raises(ValueError, match="a value holds numbers only"):
        _read_value(binary, ["1", 0])


@pytest.fixture
def link() -> Iterator[Link]:
    """A link that connects to nobody (no connection is made): its answers are read by hand."""
    made = Link(
        ADDRESS,
        binding=False,
        encoding="json",
        heartbeat=0,
        routing_id=b"room/0/s",
        describe=lambda: "external environment 'room'",
        postscript=str,
    )
    yield made
    made.close()


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([b"{}", b"{}"], "2 frames, expected 1"),
        ([b"[1, 2]"], "is not an object"),
        ([b"\x00garbage"], "is not json"),
        ([json.dumps({"id": 9, "status": "ok"}).encode()], "'id' is 9, expected 3"),
        ([json.dumps({"id": 3, "status": "fine"}).encode()], "has no 'id' and 'status' ok"),
        # (true was read as the late answer to command 1, ignored: "did not answer" at timeout)
        ([json.dumps({"id": True, "status": "ok"}).encode()], "'id' is True, expected 3"),
        ([json.dumps({"id": False, "status": "ok"}).encode()], "'id' is False, expected 3"),
    ],
)
def test_an_answer_that_is_not_the_protocol_is_refused(
    link: Link, frames: list[bytes], expected: str
) -> None:
    with pytest.raises(ExternalEnvironmentError) as info:
        link.answer(frames, "step", 3, "step 1 of episode 0 (command 3)")
    assert str(info.value).startswith(
        "external environment 'room': the answer to step is not palaestra's protocol"
    )
    assert expected in str(info.value)


def test_answers_late_error_and_msgpack(link: Link) -> None:
    assert link.answer([b'{"id": 2, "status": "ok"}'], "step", 3, "step") is None  # late
    with pytest.raises(ExternalEnvironmentError, match="answered reset with an error: it broke"):
        link.answer([b'{"id": null, "status": "error", "error": "it broke"}'], "reset", 3, "reset")
    link.encoding = "msgpack"
    packed = msgspec.msgpack.encode({"id": 3, "status": "ok", "sensors": {}})
    assert link.answer([packed], "reset", 3, "reset") == {"id": 3, "status": "ok", "sensors": {}}
    assert link.encode({"id": 1})[:1] != b"{"
    assert link.answer([b'{"id": 3, "status": "ok"}'], "reset", 3, "reset") is not None  # JSON too


def test_a_bound_address_another_socket_took_over_is_named_when_no_client_came(
    tmp_path: Path,
) -> None:
    """Two workers (or games) binding one ipc address: ZMQ lets the second replace the first's
    file, and the one that got no client said "no client connected ...; start it with
    --connect ..." of a client that had been started so."""
    address = f"ipc://{tmp_path}/room.sock"
    hint = (
        "another worker or game of this environment binding it too? put {worker} in the "
        "address, one address each: bind: tcp://*:560{worker} or ipc:///tmp/room-{worker}"
    )
    first, second = (
        ExternalEnvironment(uid="room", bind=address, connect_timeout=0.1) for _ in "ab"
    )
    links = []
    try:
        for env in (first, second):
            env.link = Link(
                address,
                binding=True,
                encoding="json",
                heartbeat=0,
                routing_id=b"room/0/s",
                describe=env._who,
                postscript=str,
            )
            links.append(env.link)
            if env is first:
                assert env._no_client().endswith(f"; start it with --connect {address}")
        expected = f"no client connected to {address} within 0.1 s (connect_timeout)"
        assert first._no_client() == (
            f"{expected}: another socket bound the address after palaestra did ({hint})"
        )
        assert second._no_client() == (
            f"{expected}; start it with --connect {address} ({address} was bound before "
            f"palaestra bound it: {hint})"
        )
    finally:
        for link in links:
            link.close()


def test_a_tcp_address_bound_already_is_named_with_what_to_do() -> None:
    env = ExternalEnvironment(uid="room", bind="tcp://127.0.0.1:*")
    kwargs: dict[str, Any] = {
        "binding": True,
        "encoding": "json",
        "heartbeat": 0,
        "routing_id": b"room/0/s",
        "describe": env._who,
        "postscript": str,
    }
    first = Link("tcp://127.0.0.1:*", **kwargs)
    try:
        address = first.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        with pytest.raises(ExternalEnvironmentError) as info:
            Link(address, **kwargs)
        assert f"cannot bind {address}: Address already in use" in str(info.value)
        assert str(info.value).endswith(
            "(another worker or game of this environment binding it too? put {worker} in the "
            "address, one address each: bind: tcp://*:560{worker} or ipc:///tmp/room-{worker})"
        )
    finally:
        first.close()
