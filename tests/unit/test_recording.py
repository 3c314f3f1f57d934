"""Unit tests of plug-in records and the recording switch (no processes)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from palaestra.agent.context import MuscleContext
from palaestra.core.errors import PalaestraError
from palaestra.core.plugin_records import PluginRecorder, PluginRecordError
from palaestra.core.recording_control import ENV_VAR, RecordingSwitch, flag_path, flags_of
from palaestra.experiment.recording import recording_flag


class Probe:
    """Calls its context's ``record`` from a method with a known name."""

    def __init__(self, context: MuscleContext) -> None:
        self.context = context

    def propose_actions(self, key: object, value: object) -> None:
        self.context.record(key, value)  # type: ignore[arg-type]


def context(recorder: PluginRecorder) -> MuscleContext:
    return MuscleContext(
        name="a", uid="Muscle-a-0", worker=0, mode="train", seed=1, sensors=[], actuators=[],
        recorder=recorder,
    )  # fmt: skip


def test_records_are_plain_json_and_popped_in_order() -> None:
    recorder = PluginRecorder("Muscle-a-0")
    probe = Probe(context(recorder))
    probe.propose_actions("array", np.arange(3, dtype=np.int64))
    probe.propose_actions("nested", {"x": (np.float32(0.5), None, True), "s": "t"})

    assert recorder.pop() == [
        ("array", [0, 1, 2]),
        ("nested", {"x": [0.5, None, True], "s": "t"}),
    ]
    assert recorder.pop() == []
    probe.propose_actions("numpy", [np.float64(0.25), np.str_("a")])  # float and str subclasses
    ((_, value),) = recorder.pop()
    assert [type(v) for v in value] == [float, str]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (object(), "builtins.object has no JSON form"),
        (float("nan"), "finite numbers only"),
        ({1: 2}, "not a str"),
        (1 << 70, "exceeds 64 bits"),
        (b"raw", "builtins.bytes has no JSON form"),
    ],
)
def test_a_value_with_no_json_form_names_the_method_and_the_key(value: object, why: str) -> None:
    probe = Probe(context(PluginRecorder("Muscle-a-0")))
    with pytest.raises(PluginRecordError) as raised:
        probe.propose_actions("bad", value)
    message = str(raised.value)
    assert message.startswith("Muscle-a-0: propose_actions() recorded 'bad': "), message
    assert why in message


def test_a_key_must_be_a_non_empty_string() -> None:
    probe = Probe(context(PluginRecorder("Muscle-a-0")))
    with pytest.raises(PluginRecordError, match=r"propose_actions\(\) .* key 3: expected"):
        probe.propose_actions(3, 1)


def test_a_key_longer_than_the_stores_column_fails_in_the_plugins_call() -> None:
    """A key over 255 characters was taken, and then failed the run in the store writer on
    PostgreSQL (``value too long for type character varying(255)``) while SQLite kept it."""
    probe = Probe(context(PluginRecorder("Muscle-a-0")))
    probe.propose_actions("k" * 255, 1)
    with pytest.raises(PluginRecordError, match=r"propose_actions\(\) .* 'kkk.*\.\.\.': .* 255"):
        probe.propose_actions("k" * 256, 1)


def test_a_key_with_a_nul_character_fails_in_the_plugins_call() -> None:
    """A key with a NUL character was taken, and then failed the run in the store writer on
    PostgreSQL (``StoreWriter: DataError: PostgreSQL text fields cannot contain NUL (0x00)
    bytes``) while SQLite kept it."""
    probe = Probe(context(PluginRecorder("Muscle-a-0")))
    with pytest.raises(PluginRecordError, match=r"propose_actions\(\) .* 'loss\\x00': .* NUL"):
        probe.propose_actions("loss\x00", 1)


def test_pause_requests_reach_the_switch(tmp_path: Path) -> None:
    switch = RecordingSwitch(tmp_path / "flags" / "run.paused")
    ctx = context(PluginRecorder("Muscle-a-0", on_pause=switch.set))
    assert not switch.paused()
    ctx.pause_recording()
    assert switch.paused()
    ctx.resume_recording()
    assert not switch.paused()
    ctx.pause_recording(True)
    ctx.pause_recording(False)
    assert not switch.paused()


def test_without_a_flag_nothing_is_ever_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    switch = RecordingSwitch()
    switch.set(True)
    assert not switch.paused()


def test_the_executor_names_a_cleared_flag_for_its_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    RecordingSwitch(flag_path("unit/run 1")).set(True)  # a stale flag of an earlier instance
    with recording_flag("unit/run 1") as switch:
        child = RecordingSwitch()  # what a forked process sees
        assert child.path == str(flag_path("unit/run 1"))
        assert not child.paused()
        switch.set(True)  # the child's map sees the byte written in place
        assert child.paused()
        switch.set(False)
        assert not child.paused()
    assert not flag_path("unit/run 1").exists()
    assert ENV_VAR not in os.environ
    assert flag_path("unit/run 1").name == f"unit_run_1.{os.getpid()}.flag"


def test_two_executions_of_one_run_have_a_flag_each_and_a_new_one_never_truncates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    first = RecordingSwitch(flag_path("unit.twice", pid=os.getppid()))  # another executor
    first.create()
    reader = RecordingSwitch(first.path)
    assert not reader.paused()  # mapped
    first.create()  # that executor made its flag again: the old map stays readable
    assert not reader.paused()
    with recording_flag("unit.twice"):
        assert sorted(flags_of("unit.twice")) == sorted(
            [flag_path("unit.twice"), flag_path("unit.twice", pid=os.getppid())]
        )
        assert flags_of("unit") == []  # a run whose uid is a prefix is another run
    assert flags_of("unit.twice") == [flag_path("unit.twice", pid=os.getppid())]
    first.remove()


def test_a_flag_whose_executor_died_is_not_set_and_is_removed() -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = flag_path("unit.dead", pid=int(child.stdout))
    RecordingSwitch(dead).create()
    assert flags_of("unit.dead") == []
    assert not dead.exists()


def test_each_user_has_a_directory_of_flags_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a shared host the flags lay in one directory, which the first user's run made (mode
    0755): every other user's run failed with a traceback (PermissionError) as it made its
    flag. Each user has a directory of their own now, which only they may enter."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / "palaestra-recording").mkdir(mode=0o755)  # the shared one: not used
    with recording_flag("unit.users") as switch:
        assert switch.path is not None
        directory = Path(switch.path).parent
        assert directory == tmp_path / f"palaestra-recording-{os.getuid()}"
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    directory.chmod(0o755)  # (made so by this user some other way: closed again)
    with recording_flag("unit.users"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a directory to another user: needs root")
def test_a_directory_of_flags_made_by_another_user_stops_the_run_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another user who made this user's directory of flags in a shared temporary directory
    could remove or replace a run's flags: the run does not start, and says what to do."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv(ENV_VAR, raising=False)
    taken = tmp_path / f"palaestra-recording-{os.getuid()}"
    taken.mkdir(mode=0o700)
    os.chown(taken, 65534, 65534)
    with pytest.raises(PalaestraError) as raised, recording_flag("unit.taken"):
        pass
    assert str(raised.value) == (
        f"{taken}, the directory of the runs' recording flags, is not this user's own "
        f"directory (owner uid 65534, drwx------; this is uid {os.getuid()}): remove it, or "
        "set TMPDIR to a directory of your own"
    )
    assert ENV_VAR not in os.environ
    assert list(taken.iterdir()) == []
