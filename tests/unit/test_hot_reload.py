"""Hot reload's parts without processes: which files are watched, when a change counts,
loading a module afresh, and what a failed reload does (see tests/system/test_hot_reload.py
for runs)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from palaestra.agent.dummy_muscle import DummyMuscle
from palaestra.agent.hot_reload import HotReload, Outcome, user_traceback
from palaestra.core.code_watch import SourceWatch, WatchedFile, class_in, load_fresh, source_of
from palaestra.core.plugin import PluginError, call

SOURCE = """\
VALUE = {value}


class Plugin:
    def __init__(self):
        self.value = VALUE
"""


DATACLASS = """\
from __future__ import annotations

import dataclasses
import typing


@dataclasses.dataclass
class Settings:
    rate: float = 0.1
    registry: typing.ClassVar[dict] = {}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A plug-in module of its own name in ``tmp_path``, imported; gone from sys.modules
    afterwards."""
    name = f"reload_unit_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SOURCE.format(value=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


def edit(path: Path, text: str, later: int) -> None:
    path.write_text(text)
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + later))


def test_only_the_users_own_modules_are_watched(module: ModuleType) -> None:
    watched = source_of(module.Plugin)
    assert watched == WatchedFile(module.__name__, module.__file__)
    assert source_of(DummyMuscle) is None  # palaestra's
    assert source_of(json.JSONDecoder) is None  # the standard library
    assert source_of(np.random.Generator) is None  # an installed package (compiled)
    assert source_of(pytest.MonkeyPatch) is None  # an installed package (site-packages)
    assert source_of(int) is None  # no file


def test_a_change_counts_once_the_file_has_settled(module: ModuleType) -> None:
    path = Path(module.__file__ or "")
    clock = Clock()
    watch = SourceWatch([WatchedFile(module.__name__, str(path))], interval=0.25, clock=clock)
    assert watch.next_check == 0.25
    assert watch.changed() == [] and watch.next_check == 0.25  # the clock did not move
    edit(path, SOURCE.format(value=2), later=1)
    assert watch.changed() == []  # seen once: it may still be being written
    edit(path, SOURCE.format(value=22), later=2)
    assert watch.changed() == []  # it was: seen once again
    clock.now = 1.0
    (found,) = watch.changed()
    assert found.module == module.__name__ and watch.next_check == 1.25
    assert watch.changed() == []  # reported once
    os.unlink(path)
    assert watch.changed() == [] and watch.changed() == []  # gone (being replaced): wait


def test_a_module_is_loaded_afresh_without_touching_the_running_one(module: ModuleType) -> None:
    path = Path(module.__file__ or "")
    watched = WatchedFile(module.__name__, str(path))
    path.write_text(SOURCE.format(value=2))  # same size, maybe the same second: no .pyc used
    fresh = load_fresh(watched)
    assert fresh is not module and sys.modules[module.__name__] is module
    assert class_in(fresh, "Plugin")().value == 2 and module.Plugin().value == 1
    with pytest.raises(LookupError, match="no longer defines the class 'Gone'"):
        class_in(fresh, "Gone")
    path.write_text(DATACLASS)  # made while its module is the one in sys.modules
    fresh = load_fresh(watched)
    assert [f.name for f in dataclasses.fields(fresh.Settings)] == ["rate"]
    assert sys.modules[module.__name__] is module
    path.write_text("VALUE = = 3\n")
    with pytest.raises(SyntaxError):
        load_fresh(watched)
    path.write_text("raise RuntimeError('in the body')\n")
    with pytest.raises(RuntimeError, match="in the body"):
        load_fresh(watched)
    assert sys.modules[module.__name__] is module


def test_a_failed_reload_keeps_the_old_code_logs_once_and_waits_for_the_next_change(
    module: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    path = Path(module.__file__ or "")
    built: list[object] = []

    def rebuild(classes: dict[str, type]) -> None:
        built.append(call(classes["muscle"]))

    clock = Clock()
    plugins = {"muscle": f"{module.__name__}:Plugin"}
    reload = HotReload("Muscle-a-0", "a", plugins, clock=clock)
    reload.rebuild = rebuild
    assert reload and "muscle" in reload.describe()
    assert reload.check() == []  # due at once (it starts due), nothing changed
    started = sys.modules[module.__name__]  # loaded afresh at the start (see below)

    def look() -> list[tuple[bool, str | None]]:
        clock.now += 1
        outcomes[:] = reload.check()
        return [(o.ok, o.error) for o in outcomes]

    outcomes: list[Outcome] = []

    edit(path, SOURCE.format(value="= 2"), later=1)
    assert look() == []  # settling
    with caplog.at_level(logging.ERROR, logger="palaestra.agent.hot_reload"):
        ((ok, error),) = look()
        assert look() == [] and look() == []  # not tried again: the file did not change
    assert not ok and error is not None and "SyntaxError" in error and "VALUE = = 2" in error
    assert "code_watch.py" not in error and "hot_reload.py" not in error  # the user's part
    assert len(caplog.records) == 1 and "the old code keeps running" in caplog.text
    assert sys.modules[module.__name__] is started and built == []

    edit(path, SOURCE.format(value=3).replace("self.value = VALUE", "1 / 0"), later=2)
    look()
    ((ok, error),) = look()
    assert not ok and error is not None
    assert error.startswith(f"{module.__name__}:Plugin.__init__ raised:\nTraceback")
    assert error.endswith("ZeroDivisionError: division by zero") and "1 / 0" in error

    edit(path, SOURCE.format(value=4), later=3)
    look()
    assert look() == [(True, None)]
    assert [p.value for p in built] == [4]  # type: ignore[attr-defined]
    assert sys.modules[module.__name__].VALUE == 4  # the new module is the one imported now
    (row,) = reload.rows(outcomes, worker=1, episode=2, step=3)
    assert (row.source, row.worker, row.episode, row.step) == ("muscle:a", 1, 2, 3)
    assert (row.module, row.path, row.ok, row.error) == (module.__name__, str(path), True, None)


def test_nothing_to_watch_for_palaestras_own_plugins() -> None:
    reload = HotReload("Muscle-a-0", "a", {"muscle": "palaestra.agent:DummyMuscle"})
    assert not reload and reload.check() == []


def test_a_process_starts_with_the_code_on_disk(
    module: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    """Forked from an executor that imported an older version (an earlier phase reloaded a
    newer one), a process loads the file again before it builds its plug-ins; a file that
    fails to load then leaves the inherited version, reported at the first check."""
    path = Path(module.__file__ or "")
    plugins = {"muscle": f"{module.__name__}:Plugin"}
    path.write_text(SOURCE.format(value=2))
    reload = HotReload("Muscle-a-0", "a", plugins)
    assert sys.modules[module.__name__] is not module
    assert sys.modules[module.__name__].Plugin().value == 2
    assert reload.check() == [] and reload.check() == []

    started = sys.modules[module.__name__]
    path.write_text("VALUE = = 3\n")
    with caplog.at_level(logging.ERROR, logger="palaestra.agent.hot_reload"):
        reload = HotReload("Muscle-a-0", "a", plugins)
    assert sys.modules[module.__name__] is started  # the version it had
    assert len(caplog.records) == 1 and "fails to load" in caplog.text
    assert reload.watch.next_check == 0.0  # the first step reports it
    (outcome,) = reload.check()
    assert (outcome.kind, outcome.ok) == ("muscle", False)
    assert "SyntaxError" in (outcome.error or "")
    assert reload.check() == []


def test_user_traceback_names_the_plugin_method_and_leaves_out_palaestra() -> None:
    class Broken:
        def setup(self) -> None:
            raise ValueError("bad parameter")

    with pytest.raises(PluginError) as caught:
        call(Broken().setup)
    text = user_traceback(caught.value)
    assert text.splitlines()[0].endswith("Broken.setup raised:")
    assert "core/plugin.py" not in text and text.endswith("ValueError: bad parameter")
