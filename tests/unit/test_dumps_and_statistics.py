"""Brain dumps by tag and plug-in statistics, as palaestrAI's plug-ins use them (no processes)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from palaestra.agent import Brain, BrainDumper, BrainDumps, Muscle, dump_keeper
from palaestra.agent.context import BrainContext, MuscleContext
from palaestra.agent.dummy_brain import DummyBrain
from palaestra.agent.dump_keeper import DumpKeeper, DumpWriteError
from palaestra.agent.statistics import StatisticsError, plain_statistics, record_statistics
from palaestra.core.description.name_rules import dump_file_name, dump_key
from palaestra.core.supervision.runtime import error_info
from palaestra.core.wire import messages as m
from palaestra.core.wire.records import statistics_values
from palaestra.experiment.store_client import NullStore, dump_dir
from palaestra.testing import RowRecorder
from tests.conftest import small_disk
from tests.unit.test_brain_rows import brain_process


class Plain(Brain):
    def thinking(self, muscle_id: str, data_from_muscle: Any) -> Any:
        return None


class Acting(Muscle):
    def propose_actions(self, sensors: list[Any], actuators_available: list[Any]) -> Any:
        return actuators_available, None


def brain(dumps: BrainDumps) -> Plain:
    plain = Plain()
    plain.attach(
        BrainContext(
            name="a",
            run_uid="r",
            phase_index=1,
            phase_name="p",
            mode="train",
            seed=0,
            sensors=[],
            actuators=[],
            dumps=dumps,
        )
    )
    return plain


def muscle(dumps: BrainDumps) -> Acting:
    acting = Acting()
    acting.attach(
        MuscleContext(
            name="a",
            uid="a-0",
            worker=0,
            mode="test",
            seed=0,
            sensors=[],
            actuators=[],
            dumps=dumps,
        )
    )
    return acting


SOURCE = "agent 'a' in phase 0 of run 'r'"
TAGGED = {"actor": b"actor", "critic": b"critic", "": b"untagged"}


# --- storing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "error", "problem"),
    [
        ("t" * 256, ValueError, "at most 255 characters (the store's column), not 256"),
        (5, TypeError, "a brain dump's tag is a str or None, not int"),
        ("best\x00", ValueError, "has no NUL character (the store's column refuses it"),
    ],
    ids=["too long", "not a str", "a NUL character"],
)
def test_a_tag_the_store_cannot_keep_fails_in_the_brains_call(
    tag: Any, error: type[Exception], problem: str
) -> None:
    """A tag over 255 characters failed the run in the store writer on PostgreSQL (``value too
    long for type character varying(255)``), where SQLite kept it; an int failed deep in the
    dump file's name. Both fail in the Brain's call now; nothing is written."""
    written: list[tuple[bytes, str]] = []
    plain = brain(BrainDumps(write=lambda d, t: written.append((d, t)), owner="Brain-a"))

    plain.store_brain_dump(b"fits", tag="t" * 255)
    with pytest.raises(error, match="a brain dump's tag") as raised:
        plain.store_brain_dump(b"dump", tag=tag)

    assert problem in str(raised.value)
    assert written == [(b"fits", "t" * 255)]


def test_a_stream_is_stored_whole_wherever_it_is_positioned() -> None:
    """harl writes with torch.save and hands over the BytesIO positioned at its end."""
    written: list[tuple[bytes, str]] = []
    plain = brain(BrainDumps(write=lambda data, tag: written.append((data, tag))))
    bio = io.BytesIO()
    bio.write(b"weights")

    BrainDumper.store_brain_dump(bio, plain._dumpers, "actor")
    bio.seek(0)
    bio.truncate(0)
    bio.write(b"more weights")
    bio.seek(3)
    plain.store_brain_dump(bio, tag="critic")
    plain.store_brain_dump(b"raw", tag=None)

    assert written == [(b"weights", "actor"), (b"more weights", "critic"), (b"raw", "")]
    assert bio.tell() == len(b"more weights")  # left at its end, as palaestrAI does


def test_an_empty_dump_is_stored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    written: list[tuple[bytes, str]] = []
    plain = brain(BrainDumps(write=lambda d, t: written.append((d, t)), owner="Brain-a"))

    with caplog.at_level(logging.WARNING):
        plain.store_brain_dump(io.BytesIO(), tag="actor")

    assert written == [(b"", "actor")]
    assert "Brain-a stored an empty brain dump (tag 'actor')" in caplog.text


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (io.StringIO('{"q": 1}'), "StringIO.read() gave str (a text stream"),
        ('{"q": 1}', "binary stream (io.BytesIO, a file opened with 'rb'), not str"),
        (np.zeros(3), "not ndarray"),
    ],
    ids=["text stream", "str", "numpy array"],
)
def test_a_dump_that_is_not_bytes_fails_in_the_brains_call(data: Any, problem: str) -> None:
    """A text stream's str reached the store writer, which failed the run as its own
    ``msgspec.ValidationError``; a str or an array failed on a missing ``seekable``. Each is
    now a TypeError in the Brain's call, saying what a dump is; nothing is written."""
    written: list[tuple[bytes, str]] = []
    plain = brain(BrainDumps(write=lambda d, t: written.append((d, t)), owner="Brain-a"))

    with pytest.raises(TypeError, match="a brain dump is bytes or a binary stream") as raised:
        plain.store_brain_dump(data, tag="actor")
    with pytest.raises(TypeError, match="a brain dump is bytes or a binary stream"):
        BrainDumper.store_brain_dump(data, plain._dumpers, "actor")  # palaestrAI's spelling

    assert problem in str(raised.value)
    assert written == []


# --- loading by tag --------------------------------------------------------------------------


def test_each_tag_loads_its_own_dump_from_its_start() -> None:
    plain = brain(BrainDumps(loaded=TAGGED, source=SOURCE))

    actor = BrainDumper.load_brain_dump(plain._dumpers, "actor")
    critic = plain.load_brain_dump(tag="critic")
    untagged = plain.load_brain_dump()

    assert actor is not None and actor.read() == b"actor"
    assert critic is not None and critic.read() == b"critic"
    assert untagged is not None and untagged.read() == b"untagged"
    assert BrainDumper.load_brain_dump([plain._dumpers], None) is not None  # palaestrAI's list


def test_a_missing_tag_among_other_dumps_is_none_and_only_debug_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """harl's SAC asks for its portable state first and falls back to other tags: palaestrAI
    says nothing, so palaestra says it at debug level only."""
    plain = brain(BrainDumps(loaded={"actor": b"a"}, source=SOURCE, owner="Brain-a"))

    with caplog.at_level(logging.DEBUG):
        assert plain.load_brain_dump(tag="sac_actor") is None

    (record,) = caplog.records
    assert record.levelno == logging.DEBUG
    assert record.getMessage() == (
        f"Brain-a: no brain dump tagged 'sac_actor' to load: {SOURCE} left dumps tagged 'actor'"
    )


def test_a_source_that_left_no_dump_at_all_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain = brain(BrainDumps(loaded={}, source=SOURCE, owner="Brain-a"))

    with caplog.at_level(logging.DEBUG):
        assert plain.load_brain_dump(tag="sac_actor") is None

    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert f"no brain dump tagged 'sac_actor' to load: {SOURCE} left no dump" in caplog.text


def test_a_brain_with_nowhere_to_load_from_is_told_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """palaestra calls Brain.load in every phase; in the first there is nothing to load."""
    plain = brain(BrainDumps(write=lambda d, t: None))

    with caplog.at_level(logging.INFO):
        assert plain.load_brain_dump(tag="actor") is None

    (record,) = caplog.records
    assert record.levelno == logging.INFO and "nowhere to load from" in record.getMessage()


def test_a_muscle_loads_the_brain_dumps_by_tag(caplog: pytest.LogCaptureFixture) -> None:
    acting = muscle(BrainDumps(loaded=TAGGED, source=SOURCE, owner="Muscle-a-0"))

    assert acting._model_loaders  # harl asserts it
    bio = BrainDumper.load_brain_dump(acting._model_loaders, "actor")
    assert bio is not None and bio.read() == b"actor"
    critic = acting.load("critic")
    assert critic is not None and critic.read() == b"critic"
    acting.prepare_model()  # the default does nothing
    with caplog.at_level(logging.WARNING):
        assert muscle(BrainDumps()).load("actor") is None
    assert "nowhere to load from" in caplog.text  # a Muscle that loads expects a dump


def test_an_empty_loaded_dump_warns(caplog: pytest.LogCaptureFixture) -> None:
    plain = brain(BrainDumps(loaded={"actor": b""}, source=SOURCE, owner="Brain-a"))

    with caplog.at_level(logging.WARNING):
        actor = plain.load_brain_dump(tag="actor")

    assert actor is not None and actor.read() == b""
    assert f"the brain dump tagged 'actor' of {SOURCE} is empty" in caplog.text


def test_without_a_store_the_next_phase_finds_each_tag_among_the_files(tmp_path: Path) -> None:
    """The newest instance's files of the agent, by tag (a tag like a path by its safe form);
    another agent's files are not taken."""
    old = dump_dir(str(tmp_path), "run", "instance-1", 0, "train")
    new = dump_dir(str(tmp_path), "run", "instance-2", 0, "train")
    files = {
        (old, dump_file_name("a", "actor")): b"old actor",
        (new, dump_file_name("a", "actor")): b"actor",
        (new, dump_file_name("a", "../rb")): b"rb",
        (new, dump_file_name("a")): b"untagged",
        (new, dump_file_name("b", "actor")): b"b's actor",
    }
    for when, ((directory, name), data) in enumerate(files.items()):
        os.makedirs(directory, exist_ok=True)
        Path(directory, name).write_bytes(data)
        os.utime(Path(directory, name), (1000 + when, 1000 + when))

    found = asyncio.run(
        NullStore(str(tmp_path)).ask(m.StoreFindDump(run_uid="run", agent="a", phase=0))
    )

    assert found == m.StoreDump(
        brain_state_id=None,
        dumps={"actor": b"actor", dump_key("../rb"): b"rb", "": b"untagged"},
    )
    none = asyncio.run(
        NullStore(str(tmp_path)).ask(m.StoreFindDump(run_uid="run", agent="a", phase=1))
    )
    assert none == m.StoreDump(brain_state_id=None, dumps={})
    own = m.StoreFindDump(run_uid="run", agent="a", phase=0, instance_uid="instance-1")
    found = asyncio.run(NullStore(str(tmp_path)).ask(own))  # (not the newer instance-2's)
    assert found == m.StoreDump(brain_state_id=None, dumps={"actor": b"old actor"})


# --- statistics ------------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory on a real 16 KiB filesystem (tmpfs) that is full; skipped where it cannot
    be mounted (it needs root)."""
    with small_disk(tmp_path / "full", "16k") as mount:
        with open(mount / "filler", "wb") as f, contextlib.suppress(OSError):
            f.write(b"x" * 65536)  # (the disk fills: its write ends short)
        yield mount


def test_a_dump_that_finds_the_disk_full_fails_naming_its_file_not_the_brain(
    full_disk: Path,
) -> None:
    """palaestra writes the dump a Brain hands it (once the round is answered): a full disk
    is palaestra's failure to report (the file, the cause, what to do), not the Brain's, and
    leaves no half-written file; the dump still goes to the store."""
    setup = msgspec.structs.replace(brain_process().request, dump_dir=str(full_disk / "dumps"))
    keeper = DumpKeeper(setup)
    brain = DummyBrain()
    brain._dumpers = BrainDumps(write=keeper.write, owner="Brain-player")
    keeper.store(brain)
    with pytest.raises(DumpWriteError) as raised:
        keeper.send(None)
    report = error_info("Brain-player", raised.value)
    path = full_disk / "dumps" / dump_file_name("player", "")
    assert report.kind == "DumpWriteError" and not report.plugin and not report.traceback
    assert f"the dump of agent 'player' could not be written to {path}" in report.message
    assert "No space left on device" in report.message and "data_path" in report.message
    assert not path.exists() and keeper.pending == []


def test_a_dump_that_finds_the_disk_full_leaves_the_files_last_dump_whole(
    tmp_path: Path,
) -> None:
    """A dump is written beside its file and renamed over it: one that fails (a full disk)
    leaves the file with the dump before it, and nothing else in the directory."""
    with small_disk(tmp_path / "small", "16k") as mount:
        keeper = DumpKeeper(msgspec.structs.replace(brain_process().request, dump_dir=str(mount)))
        keeper.write(b"the first dump", "")
        keeper.send(None)
        with open(mount / "filler", "wb") as f, contextlib.suppress(OSError):
            f.write(b"x" * 65536)  # (the disk fills)
        keeper.write(b"y" * 32768, "")
        with pytest.raises(DumpWriteError):
            keeper.send(None)
        path = mount / dump_file_name("player", "")
        assert path.read_bytes() == b"the first dump"
        assert sorted(p.name for p in mount.iterdir()) == sorted([path.name, "filler"])


def test_a_failing_brain_process_writes_the_dump_files_it_held_and_logs_a_failed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Brain process that fails sends what it kept without raising (its own failure is the
    one to report): every held dump file is written, each tag's but one that cannot be,
    which is logged; every dump goes to the store."""
    stored: list[bytes] = []
    monkeypatch.setattr(dump_keeper, "send", lambda store, dump, block: stored.append(dump.dump))
    keeper = DumpKeeper(msgspec.structs.replace(brain_process().request, dump_dir=str(tmp_path)))
    keeper.write(b"a0", "a")
    keeper.send(None, last=False)  # written: the first
    for data, tag in ((b"a1", "a"), (b"b1", "b"), (b"c1", "c")):
        keeper.write(data, tag)
    keeper.send(None, last=False)  # held: within the second
    (tmp_path / dump_file_name("player", "b")).mkdir()  # (b's file cannot be written)
    with caplog.at_level(logging.WARNING):
        keeper.send(None, block=False)
    assert (tmp_path / dump_file_name("player", "a")).read_bytes() == b"a1"
    assert (tmp_path / dump_file_name("player", "c")).read_bytes() == b"c1"
    assert "could not be written to" in caplog.text and "player-b" in caplog.text
    assert stored == [b"a0", b"a1", b"b1", b"c1"]


def test_a_dump_file_is_written_at_most_once_a_second_while_the_phase_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each dump of a tag replaces its file: while the phase runs the file is written at most
    once a ``FILE_SECONDS`` (with the newest dump), at the phase's end with whatever is newer;
    the store gets every dump when it is sent."""
    now = [100.0]
    monkeypatch.setattr(dump_keeper, "_clock", lambda: now[0])
    stored: list[bytes] = []
    monkeypatch.setattr(dump_keeper, "send", lambda store, dump, block: stored.append(dump.dump))
    keeper = DumpKeeper(msgspec.structs.replace(brain_process().request, dump_dir=str(tmp_path)))
    path = tmp_path / dump_file_name("player", "")
    files = []
    for k, at in enumerate((100.0, 100.4, 100.9, 101.2, 101.5)):
        now[0] = at
        keeper.write(b"dump %d" % k, "")
        keeper.send(None, last=False)  # (a round answered)
        files.append(path.read_bytes())
    assert files == [b"dump 0"] * 3 + [b"dump 3"] * 2
    keeper.send(None)  # the phase's end
    assert path.read_bytes() == b"dump 4"
    assert stored == [b"dump %d" % k for k in range(5)]


def test_statistics_are_added_and_popped_as_in_palaestrai() -> None:
    plain = Plain()
    plain.add_statistics("loss", 0.5)
    plain.add_statistics("loss", 0.25, allow_overwrite=True)
    plain.add_statistics("steps", 3)

    assert plain.pop_statistics() == {"loss": 0.25, "steps": 3}
    assert plain.pop_statistics() == {}
    assert plain._statistics == {}  # palaestrAI's attribute, for code that reads it


class Popping(Plain):
    """A Brain with a ``pop_statistics`` of its own: asked each time."""

    def __init__(self) -> None:
        super().__init__()
        self.pops = 0

    def pop_statistics(self) -> dict[str, Any]:
        self.pops += 1
        return {"pops": self.pops}


@pytest.mark.parametrize("plugin", [Plain(), Acting()], ids=["brain", "muscle"])
def test_a_plugin_that_added_nothing_since_the_last_pop_records_no_row(plugin: Any) -> None:
    """(the base classes' set, when empty, is seen without popping it: the Brain is asked
    once per game of a round)"""
    rows = RowRecorder("statistics")
    record_statistics(plugin, rows, "brain", 0, 0, 1)  # (no set yet: popped, one is made)
    empty = plugin._statistics
    record_statistics(plugin, rows, "brain", 0, 0, 2)
    assert rows.recorded == [] and plugin._statistics is empty  # (kept: nothing to pop)
    plugin.add_statistics("loss", 0.5)
    record_statistics(plugin, rows, "brain", 0, 0, 3)
    assert [(r.step, r.values) for r in rows.recorded] == [(3, {"loss": 0.5})]
    assert plugin._statistics == {}


def test_a_pop_statistics_of_a_plugins_own_is_called_each_time() -> None:
    plugin, rows = Popping(), RowRecorder("statistics")
    for step in range(3):
        record_statistics(plugin, rows, "brain", 0, 0, step)
    assert [r.values for r in rows.recorded] == [{"pops": 1}, {"pops": 2}, {"pops": 3}]


@pytest.mark.parametrize("plugin", [Plain(), Acting()], ids=["brain", "muscle"])
def test_a_taken_key_is_an_error_catchable_as_palaestrai_raises_it(plugin: Any) -> None:
    plugin.add_statistics("loss", 1.0)

    with pytest.raises(AssertionError, match="statistic 'loss' was already added"):
        plugin.add_statistics("loss", 2.0)
    with pytest.raises(StatisticsError, match="must be a str, not int"):
        plugin.add_statistics(1, 2.0)
    assert plugin.pop_statistics() == {"loss": 1.0}


def test_statistics_values_become_plain_for_the_store() -> None:
    torch_like = type("Tensor", (), {"tolist": lambda self: [[1.5, 2.5]]})()

    plain = plain_statistics(
        {
            "loss": np.float32(0.5),
            "grads": np.arange(3),
            "by_update": {1: (np.float64(1.0), [np.int64(2)])},
            "tensor": torch_like,
            "nan": float("nan"),
            "note": "text",
            "none": None,
        }
    )

    assert plain["loss"] == 0.5 and plain["grads"] == [0, 1, 2]
    assert plain["by_update"] == {1: [1.0, [2]]} and plain["tensor"] == [[1.5, 2.5]]
    assert math.isnan(plain["nan"]) and plain["note"] == "text" and plain["none"] is None


def test_numpy_float64_and_str_statistics_reach_the_store() -> None:
    """numpy's float64 and str_ are subclasses of float and str, which the message encoder
    refuses: they become plain values (``np.mean(...)`` is the commonest statistic there is)."""
    plain = plain_statistics({"mean": np.float64(0.25), "name": np.str_("a"), "n": [np.int64(2)]})

    assert [type(v) for v in (plain["mean"], plain["name"], plain["n"][0])] == [float, str, int]
    row = m.StatisticsRow("muscle", 0, 0, 0, plain)
    shaped = statistics_values(1, row)
    assert m.decode(m.encode(m.Rows(table="statistics", rows=[shaped]))).rows == [shaped]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (object(), "a builtins.object has no form the store can hold"),
        (b"bytes", "a builtins.bytes has no form"),
        ({(1, 2): 3}, "a dict key of type tuple has no JSON form"),
        (2**70, "exceeds 64 bits"),
    ],
)
def test_a_statistic_the_store_cannot_hold_is_named(value: Any, problem: str) -> None:
    with pytest.raises(StatisticsError, match=f"statistic 'bad': .*{problem}"):
        plain_statistics({"bad": value})
