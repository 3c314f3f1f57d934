"""Texts with a lone surrogate where palaestra makes bytes: :mod:`palaestra.core.texts`.

A lone surrogate (``"\\udcff"``: ``os.fsdecode`` of bytes that are no UTF-8) is a ``str`` no UTF-8
encoder takes. Every message, row, JSON text and statement value holding one is now made with
the surrogate as its escape, ``\\udcff``; the runs that hit them are in
``tests/system/test_lone_surrogates.py``, the store's columns in ``test_store_texts.py``.
"""

from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
import zmq

from palaestra.core.nonfinite import json_text
from palaestra.core.supervision.runtime import error_info
from palaestra.core.texts import escaped, escaped_text, path_on_disk, unescaped_text
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import RowSink, plugin_record_values, world_state_values
from tests.unit.test_messages import build

BAD = "bad \udcff"
KEPT = "bad \\udcff"
MESSAGE_TYPES: tuple[type[m.Msg], ...] = typing.get_args(m.Message)


def with_surrogates(value: Any, t: mi.Type = mi.AnyType()) -> Any:
    """``value`` (of :func:`build`, of msgspec type ``t``) with a lone surrogate at the end of
    every text in it (keys too) but the values of literal types (a phase's mode)."""
    if isinstance(t, mi.UnionType):  # (build's choice: the first type that is not None)
        t = [u for u in t.types if not isinstance(u, mi.NoneType)][0]
    if isinstance(value, str):
        return value if isinstance(t, mi.LiteralType) else value + "\udcff"
    if isinstance(value, msgspec.Struct):
        info = mi.type_info(type(value))
        assert isinstance(info, mi.StructType)
        fields = {f.name: with_surrogates(getattr(value, f.name), f.type) for f in info.fields}
        return msgspec.structs.replace(value, **fields)
    if isinstance(value, list | tuple):
        items = getattr(t, "item_types", None) or [getattr(t, "item_type", mi.AnyType())]
        typed = zip(value, items * len(value) if len(items) == 1 else items, strict=True)
        return type(value)(with_surrogates(item, u) for item, u in typed)
    if isinstance(value, dict):
        keys, values = getattr(t, "key_type", t), getattr(t, "value_type", t)
        return {with_surrogates(k, keys): with_surrogates(v, values) for k, v in value.items()}
    return value


def test_a_lone_surrogate_is_written_as_its_escape_and_nothing_else_changes() -> None:
    assert escaped_text(BAD) == KEPT
    assert escaped_text("gut ü, 漢字, 🙂 \\x00") == "gut ü, 漢字, 🙂 \\x00"
    assert escaped_text("\ud83d\ude42") == "\\ud83d\\ude42"  # (a pair, but of two surrogates)
    value = {"k\udcff": [BAD, (1, BAD)], "n": {BAD}, "x": 2.5, "b": b"\xff"}
    assert escaped(value) == {"k\\udcff": [KEPT, (1, KEPT)], "n": [KEPT], "x": 2.5, "b": b"\xff"}


def test_a_failure_whose_message_holds_a_lone_surrogate_is_reported() -> None:
    """The Muscle died of ``UnicodeEncodeError`` encoding this message (its own failure)."""
    try:
        raise ValueError(BAD)
    except ValueError as exc:
        info = error_info("Muscle-a-0", exc)

    decoded = m.decode(m.encode(m.Failed(error=info)))

    assert isinstance(decoded, m.Failed)
    assert decoded.error.message == KEPT
    assert decoded.error.traceback.rstrip().endswith(f"ValueError: {KEPT}")


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
def test_every_message_with_lone_surrogates_in_its_texts_is_sent(cls: type[m.Msg]) -> None:
    message = with_surrogates(build(cls))
    if message != build(cls):  # (it has a text: msgpack alone refuses it)
        with pytest.raises(UnicodeEncodeError):
            msgspec.msgpack.encode(message)

    decoded = m.decode(m.encode(message))

    assert decoded == escaped(message)


def test_json_text_writes_a_lone_surrogate_as_its_escape() -> None:
    """The text of the store's JSON columns (a sensor's value, a reward's name)."""
    assert json_text({"reward \udcff": 1.0, "s": [BAD, float("nan")]}) == (
        '{"reward \\\\udcff":1.0,"s":["bad \\\\udcff","nan"]}'
    )


def test_rows_with_lone_surrogates_reach_the_writer_escaped() -> None:
    """A ``context.record`` value failed the plug-in's step (``UnencodableValue``), a sensor's
    too; a reward's name killed the environment's process."""
    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    push = context.socket(zmq.PUSH)
    try:
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        push.connect(f"tcp://127.0.0.1:{port}")
        world = RowSink(push, "world_states", shape=lambda row: world_state_values(1, 0, row))
        world.add(m.WorldStateRow(0, 1, {"env.text": BAD}, {}, {"reward \udcff": 1}, False))
        world.flush()
        records = RowSink(push, "plugin_records", shape=lambda row: plugin_record_values(1, row))
        records.add(m.PluginRecordRow("muscle:a", 0, 0, 1, "note", {"text": BAD}))
        records.flush()

        (world_row,) = m.decode(pull.recv()).rows  # type: ignore[union-attr]
        (record_row,) = m.decode(pull.recv()).rows  # type: ignore[union-attr]
    finally:
        push.close(linger=0)
        pull.close(linger=0)
        context.term()
    assert world_row[4:7] == ('{"env.text":"bad \\\\udcff"}', "{}", '{"reward \\\\udcff":1}')
    assert record_row[-1] == {"text": KEPT}


def test_object_text_of_a_value_whose_surrogate_it_cannot_escape_fails_as_json_text_does() -> None:
    """A sensor's value that msgspec encodes but :func:`escaped` does not rewrite (a dataclass)
    with a lone surrogate in it: ``object_text`` (the rows' sensors, a Muscle's and a batch's)
    tried again with the same value and again, and failed with ``RecursionError``; it fails
    as ``json_text`` does, with the ``UnicodeEncodeError`` (a ``ValueError``: the value cannot
    be stored) its callers name."""
    import dataclasses

    from palaestra.core.wire.records import object_keys, object_text

    @dataclasses.dataclass
    class Reading:
        text: str

    with pytest.raises(UnicodeEncodeError):
        json_text({"env.s": Reading(BAD)})
    with pytest.raises(UnicodeEncodeError):
        object_text(object_keys(["env.s"]), ["env.s"], [Reading(BAD)])
    assert object_text(object_keys(["env.s"]), ["env.s"], [Reading("ok")]) == (
        '{"env.s":{"text":"ok"}}'
    )


def test_a_stored_path_names_the_directory_whose_name_is_no_utf8(tmp_path: Path) -> None:
    """A path the store kept with a lone surrogate's escape is read back to the directory
    whose name has the byte (``os.fsdecode``: the surrogate); one that has the six
    characters of its own is found as it is, and where both or neither are on the disk the
    stored text is kept."""
    (tmp_path / "d\udcff").mkdir()  # the byte 0xff
    (tmp_path / "e\\udcff").mkdir()  # a backslash, u, d, c, f, f
    (tmp_path / "f\udcff").mkdir()
    (tmp_path / "f\\udcff").mkdir()
    assert os.fsencode(tmp_path / "d\udcff").endswith(b"/d\xff")

    def read_back(name: str) -> str:
        stored = escaped_text(str(tmp_path / name / "run.yml"))
        return path_on_disk(stored, exists=lambda path: os.path.isdir(os.path.dirname(path)))

    assert read_back("d\udcff") == str(tmp_path / "d\udcff" / "run.yml")
    assert read_back("e\\udcff") == str(tmp_path / "e\\udcff" / "run.yml")
    assert read_back("f\\udcff") == str(tmp_path / "f\\udcff" / "run.yml")  # (both there)
    assert read_back("g\udcff") == str(tmp_path / "g\\udcff" / "run.yml")  # (neither)
    assert path_on_disk(str(tmp_path / "d\\udcff")) == str(tmp_path / "d\udcff")
    assert unescaped_text("plain \\u00e9 \\\\udcff") == "plain \\u00e9 \\\udcff"
    assert unescaped_text(escaped_text("x\ud83d\ude42 \udcff")) == "x\ud83d\ude42 \udcff"
