"""Tests of the message types and their codec, :mod:`palaestra.core.wire.messages`."""

from __future__ import annotations

import pickle
import typing
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.core.wire import messages as m

MESSAGE_TYPES: tuple[type[m.Msg], ...] = typing.get_args(m.Message)


# --- building one instance of every message type, with every field set -----------------------


def sample(t: mi.Type, depth: int = 0) -> Any:
    """A value of msgspec type ``t`` that survives a msgpack round trip unchanged."""
    if isinstance(t, mi.StructType):
        kwargs = {f.name: sample(f.type, depth + 1) for f in t.fields}
        return t.cls(**kwargs)
    if isinstance(t, mi.UnionType):
        chosen = [u for u in t.types if not isinstance(u, mi.NoneType)]
        return sample(chosen[0], depth)
    if isinstance(t, mi.LiteralType):
        return t.values[-1]
    if isinstance(t, mi.ListType):
        return [sample(t.item_type, depth + 1), sample(t.item_type, depth + 1)]
    if isinstance(t, mi.VarTupleType):
        return (sample(t.item_type, depth + 1),)
    if isinstance(t, mi.TupleType):
        return tuple(sample(u, depth + 1) for u in t.item_types)
    if isinstance(t, mi.DictType):
        return {sample(t.key_type, depth + 1): sample(t.value_type, depth + 1)}
    simple: dict[type, Any] = {
        mi.StrType: f"s{depth}",
        mi.IntType: 7 + depth,
        mi.FloatType: 0.25,
        mi.BoolType: True,
        mi.BytesType: b"\x00\x80payload",
        mi.NoneType: None,
        mi.AnyType: {"nested": [1, 2.5, "x", None, [True]]},
    }
    return simple[type(t)]


def build(cls: type[m.Msg]) -> m.Msg:
    message = sample(mi.type_info(cls))
    assert isinstance(message, cls)
    return message


def all_msg_subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found.add(sub)
        found |= all_msg_subclasses(sub)
    return found


def test_the_union_holds_every_message_class() -> None:
    """Every message class but the two a Brain decodes experiences as (:func:`m.decode_kept`),
    which have the tags of the two they stand for."""
    assert len(MESSAGE_TYPES) == len(set(MESSAGE_TYPES))
    defined = {c for c in all_msg_subclasses(m.Msg) if c.__module__.startswith(m.__name__)}
    kept = {m.KeptExperience, m.KeptExperiences}
    assert defined - kept == set(MESSAGE_TYPES) and kept <= defined


def test_a_brain_keeps_an_experiences_transition_encoded() -> None:
    """Decoded as a Brain decodes it, an experience's transition is its encoded form (one
    byte, nil, where it has none), which decodes to what the Muscle sent; every other
    message decodes as :func:`m.decode` decodes it."""
    transition = m.Transition([[0.5, -1.0]], {"env.push": 1}, [m.InfoDesc("env.r", None, 2.0)])
    sent = m.Experiences(
        worker=3,
        items=[
            m.Experience(worker=0, transition=transition, data=None, done=False, objective=1.5),
            m.Experience(worker=1, transition=None, data=b"x", done=True, step=4),
        ],
    )
    kept = m.decode_kept(m.encode(sent))
    assert isinstance(kept, m.KeptExperiences) and kept.worker == 3
    first, second = kept.items
    assert first.completed and m.transition_of(first.transition) == transition
    assert (first.objective, first.done, second.done, second.step) == (1.5, False, True, 4)
    assert not second.completed and second.data == b"x"
    evaluate = m.AgentEvaluate(evaluation=2)
    assert m.decode_kept(m.encode(evaluate)) == evaluate


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
def test_every_message_round_trips(cls: type[m.Msg]) -> None:
    message = build(cls)
    data = m.encode(message)
    assert isinstance(data, bytes)
    decoded = m.decode(data)
    assert type(decoded) is cls
    assert decoded == message
    assert m.encode(decoded) == data


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
def test_every_message_round_trips_with_defaults(cls: type[m.Msg]) -> None:
    """Only the required fields set: defaults survive the round trip too."""
    info = mi.type_info(cls)
    required = {f.name: sample(f.type) for f in info.fields if f.required}
    message = cls(**required)
    assert m.decode(m.encode(message)) == message


def test_decoded_messages_are_frozen() -> None:
    message = m.decode(m.encode(m.Shutdown(reason="bye")))
    with pytest.raises(AttributeError):
        message.reason = "changed"  # type: ignore[misc]


def test_the_tag_is_the_class_name() -> None:
    data = m.encode(m.Shutdown(reason="bye"))
    assert msgspec.msgpack.decode(data) == ["Shutdown", "bye"]


def test_opaque_bytes_fields_stay_bytes() -> None:
    payload = pickle.dumps(Trap())
    message = m.Experience(worker=0, transition=None, data=payload, done=False)
    decoded = m.decode(m.encode(message))
    assert isinstance(decoded, m.Experience)
    assert decoded.data == payload
    assert SPRUNG == []


# --- rejecting bad input ----------------------------------------------------------------------

GARBAGE = [
    b"",
    b"\xc1",  # never used in msgpack
    b"\x00",
    b"not msgpack at all",
    b"\x92\xa8Shutdown",  # truncated
    m.encode(m.Shutdown(reason="x"))[:-1],  # truncated
    m.encode(m.Shutdown(reason="x")) + b"\x00",  # trailing data
    b"\xff" * 64,
]


@pytest.mark.parametrize("data", GARBAGE, ids=repr)
def test_garbage_is_rejected(data: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        m.decode(data)


WRONG_SHAPES = {
    "map instead of array": {"reason": "x"},
    "plain string": "Shutdown",
    "integer": 3,
    "empty array": [],
    "unknown tag": ["NoSuchMessage", "x"],
    "tag of a non-message": ["ErrorInfo", "p", "k", "m"],
    "wrong field type": ["Shutdown", 5],
    "missing required field": ["Ready"],
    "nested wrong type": ["Failed", {"process": "p"}],
    "wrong literal": [
        "SimulationRun",
        [],
        1,
        "evaluate",
    ],
    "map form of a message": {"type": "Shutdown", "reason": "x"},
    "lower-case tag": ["shutdown", "x"],
}


@pytest.mark.parametrize("shape", list(WRONG_SHAPES.values()), ids=list(WRONG_SHAPES))
def test_msgpack_of_the_wrong_shape_is_rejected(shape: Any) -> None:
    data = msgspec.msgpack.encode(shape)
    with pytest.raises(msgspec.ValidationError):
        m.decode(data)


def test_validation_error_is_a_decode_error() -> None:
    """Callers may catch ``msgspec.DecodeError`` alone and still reject every bad input."""
    assert issubclass(msgspec.ValidationError, msgspec.DecodeError)


@pytest.mark.parametrize(
    "data",
    [b"\x92\xa8Shutdown\xa1\x80", b"\x92\xa5Ready\xa2\xff\xfe", b"\x91\xa2\xff\xfe"],
    ids=repr,
)
def test_a_string_that_is_not_utf8_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        m.decode(data)


def test_extra_fields_are_rejected() -> None:
    with pytest.raises(msgspec.ValidationError):
        m.decode(msgspec.msgpack.encode(["Shutdown", "x", "unexpected"]))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_yield_anything_but_a_valid_message(data: bytes) -> None:
    try:
        message = m.decode(data)
    except msgspec.DecodeError:
        return
    except UnicodeDecodeError:
        return  # a known bug, see test_a_string_that_is_not_utf8_is_a_decode_error
    assert isinstance(message, MESSAGE_TYPES)
    assert m.decode(m.encode(message)) == message


# --- pickles are never unpickled ----------------------------------------------------------------

SPRUNG: list[str] = []


def _spring(marker: str) -> str:
    SPRUNG.append(marker)
    return marker


class Trap:
    """Unpickling this calls :func:`_spring`, so we can see whether anything unpickled it."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_spring, ("unpickled!",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_pickle_is_rejected_without_unpickling(protocol: int) -> None:
    SPRUNG.clear()
    for obj in (Trap(), m.Shutdown(reason="x"), [Trap(), m.StoreAck()]):
        payload = pickle.dumps(obj, protocol=protocol)
        with pytest.raises(msgspec.DecodeError):
            m.decode(payload)
    assert SPRUNG == []
    # the payload is live: unpickling it really would run code
    pickle.loads(pickle.dumps(Trap(), protocol=protocol))
    assert SPRUNG == ["unpickled!"]
    SPRUNG.clear()


# --- ErrorInfo.describe -------------------------------------------------------------------------

TRACEBACK = "\n".join(
    ["Traceback (most recent call last):"]
    + [f'  File "plugin.py", line {i}, in step_{i}' for i in range(1, 9)]
    + ["ValueError: the last line"]
)


def test_describe_contains_process_plugin_kind_message_and_last_traceback_lines() -> None:
    info = m.ErrorInfo(
        process="Muscle-attacker-0",
        plugin="my.module:MyMuscle",
        kind="ValueError",
        message="the last line",
        traceback=TRACEBACK + "\n\n",
    )
    text = info.describe()
    lines = text.splitlines()
    assert lines[0] == "Muscle-attacker-0 (my.module:MyMuscle): ValueError: the last line"
    assert lines[1:] == TRACEBACK.splitlines()[-6:]
    assert lines[-1] == "ValueError: the last line"
    assert "Traceback (most recent call last)" not in text
    assert "step_1" not in text


def test_describe_with_a_short_traceback_shows_all_of_it() -> None:
    info = m.ErrorInfo(process="p", kind="K", message="msg", traceback="line one\nline two\n")
    assert info.describe() == "p: K: msg\nline one\nline two"


def test_describe_without_plugin_traceback_or_kind() -> None:
    assert m.ErrorInfo(process="p", kind="KeyError", message="'x'").describe() == (
        "p: KeyError: 'x'"
    )
    assert m.ErrorInfo(process="p", kind="", message="gone").describe() == "p: gone"
    assert m.ErrorInfo(process="p", kind="", message="m", plugin="a:B").describe() == (
        "p (a:B): m"
    )


def test_error_info_round_trips_inside_failed() -> None:
    info = m.ErrorInfo(
        process="p", kind="K", message="m", traceback=TRACEBACK, plugin="a:B", exit_code=-9
    )
    decoded = m.decode(m.encode(m.Failed(error=info)))
    assert isinstance(decoded, m.Failed)
    assert decoded.error == info
    assert decoded.error.describe() == info.describe()
